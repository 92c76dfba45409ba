// One deployment in queue mode as separate processes, the way it runs in production: API
// processes (`--role=api`) and worker processes on one Redis, one queue prefix and one uploads
// folder. Several files start them (the scaler, the tasks across processes, the worker's health);
// the environment and the "started" lines they wait for are written here once.
import { onThisMachine } from './deadline.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';

export interface Deployment {
  readonly redisUrl: string;
  readonly queuePrefix: string;
  readonly uploadDir: string;
}

/**
 * The environment of an API or a worker process of `deployment`: its queue and folder, one job
 * thread per process (another "host" is another thread), info logs (the tests wait on lines);
 * `extra` adds or overrides (API_KEY, METRICS_TOKEN, PORT…).
 */
export function processEnv(deployment: Deployment, extra: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: deployment.redisUrl,
    QUEUE_PREFIX: deployment.queuePrefix,
    UPLOAD_DIR: deployment.uploadDir,
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '1',
    ...extra,
  };
}

/** An API process (`--role=api`) on a free loopback port, once it listens; `url` is its address. */
export async function startApiProcess(
  env: Record<string, string>,
  { startMs = 15_000 }: { startMs?: number } = {},
): Promise<{ process: ServiceProcess; url: string }> {
  const process = startServiceProcess('services/api/dist/main.js', { ...env, HOST: '127.0.0.1', PORT: '0' }, ['--role=api']);
  try {
    return { process, url: (await process.line('censo-api listening', onThisMachine(startMs))).url as string };
  } catch (err) {
    await process.stop();
    throw err;
  }
}

/** A worker process, once it takes jobs. */
export async function startWorkerProcess(
  env: Record<string, string>,
  { startMs = 15_000 }: { startMs?: number } = {},
): Promise<ServiceProcess> {
  const worker = startServiceProcess('services/worker/dist/main.js', env);
  try {
    await worker.line('worker started', onThisMachine(startMs));
    return worker;
  } catch (err) {
    await worker.stop();
    throw err;
  }
}
