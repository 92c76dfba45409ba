// Prometheus metrics (SPEC §6: `GET /metrics`, with `x-api-key` or METRICS_TOKEN as a bearer
// token). One Registry per app, never prom-client's global one: tests build several apps in one
// process, and two registrations of one name in the global registry would throw.
//
// Everything request-related is read when a request ends (finished or abandoned), from what the routes tell the
// request log (plugins/request-log.ts: job outcome and duration, upload bytes, query rows), so
// the log line and the metrics cannot disagree. Label values are bounded: the route *pattern*
// (never the raw URL), declared query names, job kinds and a fixed set of outcomes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { pino, type LevelWithSilent } from 'pino';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import {
  ApiNotConfiguredError,
  EVENT_LOOP_SAMPLE_MS,
  InvalidCredentialError,
  createFailoverCounter,
  createJobMetrics,
  createMetricsCredentialCheck,
  type Config,
  type Logger,
} from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';

export const METRICS_PREFIX = 'censo_';

/** States reported by `censo_queue_jobs` (BullMQ runner only). */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/** Job outcomes: `rejected` is a bad file (400/422 result), `cancelled` a client that went away. */
export type JobOutcome = 'ok' | 'rejected' | 'timeout' | 'cancelled' | 'error';

export interface AppMetrics {
  readonly registry: Registry;
  /** The upload routes hand over their in-flight counter (read on scrape). */
  trackInFlightUploads(current: () => number): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: AppMetrics;
  }
}

export interface MetricsOptions {
  /** `redis`: with Sentinel, the API counts the failovers too (censo_redis_failovers_total). */
  readonly config: Pick<Config, 'apiKeys' | 'metricsToken'> & Partial<Pick<Config, 'redis'>>;
  readonly runner: Pick<JobRunner, 'counts' | 'shardRests'>;
  readonly logger: Pick<Logger, 'warn'>;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** A 404 has no route pattern: all of them share one label value. */
const UNMATCHED_ROUTE = 'unmatched';

export function createMetrics(runner: MetricsOptions['runner'], logger: MetricsOptions['logger'], redis: Config['redis'] = null) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRICS_PREFIX, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  // Every role counts the Redis failovers (issue 48): a `start:api` process serves the alert
  // CensoRedisFailover as a worker does, from what its own queue events' connection hears.
  const failovers = createFailoverCounter(registry, redis);

  const httpRequests = new Counter({
    name: 'censo_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'censo_http_request_duration_seconds',
    help: 'Time from receiving the request to the end of the response, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const jobs = createJobMetrics(registry, {
    prefix: METRICS_PREFIX,
    countHelp: 'Jobs run for upload requests, by kind and outcome (ok, rejected, timeout, cancelled, error).',
    durationHelp: 'Time a request waited for its job (queue + run), by kind and outcome.',
  });
  const uploadBytes = new Counter({
    name: 'censo_upload_bytes_total',
    help: 'Bytes of uploaded files written to the storage (UPLOAD_DIR or the S3 bucket), by form field.',
    labelNames: ['field'] as const,
    registers: [registry],
  });
  const queryRows = new Counter({
    name: 'censo_query_rows_total',
    help: 'Rows sent by GET /api/query, by query and format.',
    labelNames: ['query', 'format'] as const,
    registers: [registry],
  });

  const inFlightSources: (() => number)[] = [];
  new Gauge({
    name: 'censo_inflight_uploads',
    help: 'Upload requests being received or waiting for their job (MAX_INFLIGHT_UPLOADS bounds it).',
    registers: [registry],
    collect() {
      this.set(inFlightSources.reduce((sum, current) => sum + current(), 0));
    },
  });

  if (runner.counts) {
    const counts = runner.counts.bind(runner);
    let warned = false;
    new Gauge({
      name: 'censo_queue_jobs',
      help: 'Jobs in the BullMQ queue by state, read from Redis on each scrape (absent while Redis is unreachable).',
      labelNames: ['state'] as const,
      registers: [registry],
      async collect() {
        // A scrape must not fail because Redis is down (that is what /readyz and the
        // http metrics are for): report no samples rather than stale ones.
        this.reset();
        try {
          const byState = await counts();
          for (const state of QUEUE_STATES) this.set({ state }, byState[state] ?? 0);
          warned = false;
        } catch (err) {
          if (!warned) logger.warn({ err }, 'queue depth unavailable for /metrics');
          warned = true;
        }
      },
    });
  }

  if (runner.shardRests) {
    const rests = runner.shardRests.bind(runner);
    new Counter({
      name: 'censo_queue_shard_rests_total',
      help: 'Times a shard refused work and was passed over for new requests for a few seconds (QUEUE_SHARDS above 1), by shard.',
      labelNames: ['shard'] as const,
      registers: [registry],
      collect() {
        // The count lives in the shard choice; a scrape copies it.
        this.reset();
        rests().forEach((count, shard) => this.inc({ shard: String(shard) }, count));
      },
    });
  }

  function observe(request: FastifyRequest, reply: FastifyReply, status: number): void {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const labels = { method: request.method, route, status: String(status) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, reply.elapsedTime / 1000);

    const fields = request.logFields;
    if (!fields) return;
    if (fields.kind && fields.outcome)
      jobs.observe(fields.kind, fields.outcome, fields.jobMs === undefined ? undefined : fields.jobMs / 1000);
    for (const [field, bytes] of Object.entries(fields.bytes ?? {})) {
      if (bytes > 0) uploadBytes.inc({ field }, bytes);
    }
    if (fields.query && fields.format && fields.rows !== undefined) {
      queryRows.inc({ query: fields.query, format: fields.format }, fields.rows);
    }
  }

  const metrics: AppMetrics = {
    registry,
    trackInFlightUploads: (current) => void inFlightSources.push(current),
  };
  return { metrics, observe, stop: () => failovers?.stop() };
}

/** `/metrics` credentials (shared with the worker's health server): 503 / 401 / pass. */
export function requireMetricsCredential(config: MetricsOptions['config']) {
  const check = createMetricsCredentialCheck(config);
  return async (request: FastifyRequest) => {
    const verdict = check(request.headers);
    if (verdict === 'unconfigured') throw new ApiNotConfiguredError();
    if (verdict === 'invalid') throw new InvalidCredentialError();
  };
}

/**
 * A route's `logLevel` replaces the app's: 'warn' on a route of an app at 'silent' would start
 * logging. This keeps whichever of the two is quieter.
 */
export function quieterLevel(app: FastifyInstance, level: 'warn' | 'error'): LevelWithSilent {
  const current = app.log.level as LevelWithSilent;
  if (current === 'silent') return current;
  const values = pino.levels.values;
  return (values[current] ?? 0) >= (values[level] ?? 0) ? current : level;
}

async function metricsRoutes(app: FastifyInstance, { config, runner, logger }: MetricsOptions): Promise<void> {
  const { metrics, observe, stop } = createMetrics(runner, logger, config.redis ?? null);
  app.decorate('metrics', metrics);
  app.addHook('onClose', async () => stop());
  // Finished and abandoned requests alike (request-log.ts), so cancelled jobs are counted too.
  app.onRequestEnd(observe);

  app.get(
    '/metrics',
    {
      // Scrapes every few seconds would drown the request log: only failures are logged.
      logLevel: quieterLevel(app, 'warn'),
      onRequest: requireMetricsCredential(config),
      schema: {
        tags: ['operação'],
        summary: 'Métricas Prometheus (formato texto)',
        description:
          'Requisições por rota e status, jobs por resultado, profundidade da fila, bytes enviados e linhas de consulta. ' +
          'Autenticação: `Authorization: Bearer <METRICS_TOKEN>` ou `x-api-key` com a API_KEY.',
        security: [{ metricsToken: [] }, { apiKey: [] }],
        response: {
          200: {
            description: 'Métricas no formato de exposição de texto do Prometheus 0.0.4.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          401: { description: 'Credencial ausente ou inválida: `Credencial inválida (header x-api-key).`', $ref: 'Erro#' },
          503: { description: 'Nem METRICS_TOKEN nem API_KEY configurados: `API não configurada (defina a env API_KEY).`', $ref: 'Erro#' },
        },
      } as object,
    },
    async (_request, reply) => {
      const body = await metrics.registry.metrics();
      return reply.header('cache-control', 'no-store').type(metrics.registry.contentType).send(body);
    },
  );
}

/**
 * Not encapsulated, so it sees every route's end and `app.metrics` is visible to the route
 * plugins; it hangs off the request log's end-of-request event.
 */
export const metricsPlugin = fp(metricsRoutes, {
  name: 'censo-metrics',
  fastify: '5.x',
  dependencies: ['censo-request-log'],
  decorators: { fastify: ['onRequestEnd'] },
});
