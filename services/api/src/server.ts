// The process shell around the app: logger, dependencies, listen, graceful close.
// `npm start` runs role "all" (API + jobs: an in-process pool without Redis settings, or a BullMQ
// worker in this same process with them); `npm run start:api` runs role "api" (needs Redis).
import { mkdir } from 'node:fs/promises';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { RunningWorker } from '@censo/worker';
import {
  BATCH_NICENESS,
  createJobPool,
  createLogger,
  createStorage,
  loadColumnsFile,
  NOT_A_STOP,
  type Config,
  type Logger,
  type Storage,
} from '@censo/shared';
import { buildApp, type AppDeps } from './app.js';
import { createInProcessRunner } from './jobs/in-process.js';
import { embeddedTaskBackend, type TaskBackend } from './jobs/task-backend.js';
import { loadCatalog } from './query/catalog.js';
import { createQueryService } from './query/service.js';
import type { JobRunner } from './jobs/runner.js';
import { openSafra, safraConfig } from './safra/index.js';

export type Role = 'all' | 'api';

/** Time allowed for in-flight requests and jobs to finish after SIGTERM/SIGINT. */
const SHUTDOWN_GRACE_MS = 30_000;

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly url: string;
  close(): Promise<void>;
}

async function createRunner(
  config: Config,
  role: Role,
  logger: Logger,
  storage: Storage,
): Promise<{ runner: JobRunner; tasks: TaskBackend; worker: RunningWorker | null }> {
  if (!config.redis) {
    // Room for every admitted upload (MAX_INFLIGHT_UPLOADS, checked before the body is read), so
    // the pool never refuses a request whose body the client has already sent.
    const vocabulary = await loadColumnsFile(config.columnsFile);
    const pool = createJobPool({ threads: config.workerConcurrency, maxQueue: config.maxInFlightUploads, vocabulary });
    // The tasks' jobs on threads of their own, below the requests' (SPEC §7.5), as a worker runs them.
    const tasks = createJobPool({ threads: config.workerConcurrency, vocabulary, niceness: BATCH_NICENESS });
    return {
      runner: createInProcessRunner(pool, storage),
      tasks: embeddedTaskBackend(createInProcessRunner(tasks, storage), config, { ownsRunner: true }),
      worker: null,
    };
  }
  const { createQueueRunner } = await import('./jobs/sharded.js');
  const { queueTaskBackend } = await import('./jobs/queue-task-backend.js');
  const { startWorker } = await import('@censo/worker');
  // The process's logger already binds `role`: binding it again would write the key twice in
  // every worker line, which log pipelines such as OpenSearch refuse (SPEC §9). `component`
  // tells the worker's lines apart instead, as `tarefas` does for its own.
  const worker = role === 'all' ? await startWorker(config, logger.child({ component: 'worker' }), { storage }) : null;
  const runner = createQueueRunner(config, logger);
  return { runner, tasks: queueTaskBackend(runner, config), worker };
}

export async function startServer(
  config: Config,
  role: Role,
  logger = createLogger(config, { service: 'censo-api', role }),
  /** Tests only (shorter session lifetimes); never read from the environment. */
  internals: Pick<AppDeps, 'sessionLifetimes'> = {},
): Promise<RunningServer> {
  // Without a database the query route answers 503, but a broken QUERIES_FILE is still a
  // setting error: it stops the start now rather than on the day DATABASE_URL is set.
  if (config.databaseUrl === null && config.queriesFile !== null) await loadCatalog(config.queriesFile);
  // The folder storage's uploads, or with S3 the in-process worker's scratch copies.
  if (config.storage.kind === 'folder' || role === 'all') await mkdir(config.uploadDir, { recursive: true, mode: 0o700 });
  const storage = await createStorage(config, logger);
  const { runner, tasks, worker } = await createRunner(config, role, logger, storage);
  const query = config.databaseUrl === null ? null : await createQueryService(config, logger);
  // The season ledger (SPEC §13): the query route's database in a schema of its own, else PGlite.
  const safra = await openSafra(safraConfig(process.env, config.uploadDir, config.databaseUrl), logger, {
    embedded: config.redis === null,
  });
  const app = await buildApp({ config, logger, runner, tasks, storage, query, safra, ...internals });
  // The in-process worker's own metrics are served by this /metrics, but not one the API already
  // has: its censo_redis_failovers_total counts the failovers every connection of this process
  // hears, the worker's included (shared/src/runtime/job-metrics.ts), so the worker's would be
  // the same count under a name the registry cannot hold twice.
  for (const metric of worker?.metrics ?? []) {
    if (app.metrics.registry.getSingleMetric((await metric.get()).name) === undefined) app.metrics.registry.registerMetric(metric);
  }
  const url = await app.listen({ host: config.host, port: config.port });
  const where =
    config.storage.kind === 's3' ? { bucket: config.storage.bucket, prefix: config.storage.prefix } : { uploadDir: config.uploadDir };
  logger.info({ url, jobs: runner.mode, worker: worker !== null, storage: config.storage.kind, ...where }, 'censo-api listening');
  // Fail-closed rather than a stop (SPEC §4, §9): the process runs, answers 503 to keys and is
  // not ready; this line says why before anyone reads /readyz.
  if (config.apiKeys.length === 0) {
    logger.warn(
      config.signIn === null
        ? 'API_KEY is not set: the API answers 503 to every key and /readyz is 503 (api_key: ausente)'
        : 'API_KEY is not set: only signed-in people can use the API; integrations get 503',
    );
  }

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      // Stop taking requests and let the in-flight ones finish, then let the worker finish or
      // hand back its active jobs.
      await app.close();
      await worker?.close();
      await safra?.close();
      storage.close();
    })());
  return { app, url, close };
}

/**
 * Wires SIGTERM/SIGINT and fatal errors to a bounded graceful close; not the operator's signals
 * (SIGHUP, SIGUSR2: handleOperatorSignals in main.ts), which must leave the process serving.
 */
export function closeOnSignals(server: { close(): Promise<void> }, logger: Logger): void {
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS, skip: NOT_A_STOP }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'fatal error, closing');
    else logger.info({ signal }, 'closing');
    await server.close();
  });
}
