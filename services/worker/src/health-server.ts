// The worker's own health and metrics endpoint (SPEC §6: "a start:worker process may listen on
// PORT"), served only when PORT is set for it, so a worker and an API on one host never fight
// over the default port. Plain node:http: three GET routes do not need a framework.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, collectDefaultMetrics } from 'prom-client';
import {
  ABORT_CANCELLED,
  ApiNotConfiguredError,
  EVENT_LOOP_SAMPLE_MS,
  UPLOAD_GONE,
  closeRedisClient,
  createRedisClient,
  throttledErrorLog,
  InvalidCredentialError,
  createJobMetrics,
  createMetricsCredentialCheck,
  httpMessages,
  withTimeout,
  type Config,
  type GroupSummary,
  type JobResult,
  type Logger,
} from '@censo/shared';
import type { RunningWorker } from './worker.js';

export interface WorkerHealthServer {
  readonly url: string;
  close(): Promise<void>;
}

const REDIS_PING_TIMEOUT_MS = 1_000;

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json; charset=utf-8'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function createWorkerMetrics(running: RunningWorker) {
  const registry = new Registry();
  registry.setDefaultLabels({ role: 'worker' });
  collectDefaultMetrics({ register: registry, prefix: 'censo_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  for (const metric of running.metrics) registry.registerMetric(metric);
  const jobs = createJobMetrics(registry, {
    prefix: 'censo_worker_',
    countHelp: 'Jobs this worker finished, by kind and outcome (ok, rejected, cancelled, error).',
    durationHelp: 'Time from a job becoming active on this worker to its end.',
  });
  const observe = (kind: string, outcome: string, processedOn?: number, finishedOn?: number) =>
    jobs.observe(kind, outcome, processedOn ? ((finishedOn ?? Date.now()) - processedOn) / 1000 : undefined);
  // Every queue it takes from (each shard's): the synchronous requests' and the tasks'.
  for (const worker of running.queues) {
    // A group job (several tasks) is ok once it ran them: each task's own outcome is in its result.
    worker.on('completed', (job, result: JobResult | GroupSummary) =>
      observe(job.name, 'tarefas' in result || result.ok ? 'ok' : 'rejected', job.processedOn, job.finishedOn),
    );
    worker.on('failed', (job, err) => {
      const cancelled = err.message === ABORT_CANCELLED || err.message === UPLOAD_GONE;
      observe(job?.name ?? 'unknown', cancelled ? 'cancelled' : 'error', job?.processedOn, job?.finishedOn);
    });
  }
  return registry;
}

/** A small connection of its own: the worker's blocking connections are busy waiting for jobs. */
function createRedisProbe(settings: NonNullable<Config['redis']>, onError: (err: unknown) => void) {
  const redis = createRedisClient(settings, 'fail-fast', { connectTimeout: REDIS_PING_TIMEOUT_MS, commandTimeout: REDIS_PING_TIMEOUT_MS });
  redis.on('error', onError);
  return {
    answers: (): Promise<boolean> =>
      withTimeout(redis.ping(), REDIS_PING_TIMEOUT_MS).then(
        (reply) => reply === 'PONG',
        () => false,
      ),
    close: () => closeRedisClient(redis),
  };
}

export async function startHealthServer(config: Config, running: RunningWorker, log: Logger): Promise<WorkerHealthServer> {
  const registry = createWorkerMetrics(running);
  const credential = createMetricsCredentialCheck(config);
  const onError = throttledErrorLog(log);
  if (!config.redis) throw new Error('the worker health server needs Redis settings');
  const redis = createRedisProbe(config.redis, (err) => onError('health probe', err));

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return send(res, 404, { erro: httpMessages.notFound });
    if (path === '/healthz') return send(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const checks: Record<string, 'ok' | 'falha'> = {
        redis: running.queues.every((queue) => queue.isRunning()) && (await redis.answers()) ? 'ok' : 'falha',
      };
      // A worker that cannot reach the bucket would fail every job it takes.
      if (running.storage.kind === 's3') checks.storage = (await running.storage.isReady()) ? 'ok' : 'falha';
      const ready = Object.values(checks).every((check) => check === 'ok');
      return send(res, ready ? 200 : 503, { status: ready ? 'ok' : 'indisponível', checks });
    }
    if (path === '/metrics') {
      const verdict = credential(req.headers);
      if (verdict === 'unconfigured') return send(res, 503, { erro: new ApiNotConfiguredError().message });
      if (verdict === 'invalid') return send(res, 401, { erro: new InvalidCredentialError().message });
      return send(res, 200, await registry.metrics(), registry.contentType);
    }
    return send(res, 404, { erro: httpMessages.notFound });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err }, 'health server error');
      if (!res.headersSent) send(res, 500, { erro: httpMessages.internal });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  }).catch(async (err: unknown) => {
    await redis.close();
    throw err;
  });
  const { address, port } = server.address() as AddressInfo;
  const url = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  log.info({ url }, 'worker health server listening');
  return {
    url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await redis.close();
    },
  };
}
