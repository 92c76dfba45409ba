#!/usr/bin/env node
// Entry point of `npm start` (API + jobs) and `npm run start:api` (`--role=api`).
import './heap-tuning.js'; // first: the collector's settings apply before the heap grows
// Tracing starts before anything it instruments is loaded (ioredis, pg, the S3 client, Fastify):
// the rest of the service is imported below, dynamically, once it has. Off (no OTLP endpoint),
// this loads @opentelemetry/api alone.
import { startTelemetry, type RunningTelemetry } from '@censo/shared/telemetry';
import type { RunningServer, Role } from './server.js';

const role: Role = process.argv.includes('--role=api') ? 'api' : 'all';

function fail(message: string): never {
  console.error(`censo-api: ${message}`);
  process.exit(1);
}

let telemetry: RunningTelemetry;
try {
  telemetry = await startTelemetry(process.env, { serviceName: 'censo-api', instrumentations: apiInstrumentations });
} catch (err) {
  // A ConfigError (an invalid OTEL_* value); the class itself comes with the rest of @censo/shared.
  if (err instanceof Error && err.name === 'ConfigError') fail(err.message);
  throw err;
}

const { ConfigError, createLogger, handleOperatorSignals, loadConfig } = await import('@censo/shared');
const { reopenAccessLogs } = await import('./auth/access-log.js');
const { closeOnSignals, startServer } = await import('./server.js');

let config;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) fail(err.message);
  throw err;
}
if (role === 'api' && !config.redis) {
  fail(
    'start:api needs REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES (the API alone cannot run jobs); use npm start for a single process',
  );
}

const logger = createLogger(config, { service: 'censo-api', role });
if (telemetry.enabled) logger.info('tracing on (OpenTelemetry, OTLP)');
// Signals are handled from the start, so a SIGTERM during start-up closes what has started.
let server: RunningServer | undefined;
closeOnSignals(
  {
    close: async () => {
      await server?.close();
      // The last requests' spans go out before the process ends.
      await telemetry.shutdown().catch((err: unknown) => logger.warn({ err }, 'the last spans could not be sent'));
    },
  },
  logger,
);
// SIGHUP reopens ACCESS_LOG; a heap snapshot or a diagnostic report on signal leaves it serving.
handleOperatorSignals(logger, { reopen: reopenAccessLogs });
try {
  server = await startServer(config, role, logger);
} catch (err) {
  fail(`could not start: ${err instanceof Error ? err.message : String(err)}`);
}

/** What a request's span says for a path no route matched. */
const UNMATCHED_PATH = '(sem rota)';

/** The API's own instrumentations, loaded only when tracing is on: Fastify's and pg's. */
async function apiInstrumentations() {
  const [{ FastifyOtelInstrumentation }, { PgInstrumentation }] = await Promise.all([
    import('@fastify/otel'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const unTraced = new Set(['/healthz', '/readyz', '/metrics']);
  return [
    new FastifyOtelInstrumentation({
      // On every Fastify instance as it is made, so before any route (app.ts stays as it is).
      registerOnInitialization: true,
      // Probes and scrapes every few seconds would bury the requests' traces.
      ignorePaths: (route) => unTraced.has(route.url),
      // A span per hook of every request is noise; the request's span and its handler's say enough.
      instrumentHooks: false,
      // An error's message may quote what was sent (JSON.parse does): its type is enough.
      recordExceptions: false,
      // The path only: GET /api/query's query string carries the filters' values (CPFs, names). A
      // path no route matched is whatever a client typed (issue 59): it is not recorded.
      requestHook: (span, request) =>
        span.setAttribute('url.path', request.routeOptions.url === undefined ? UNMATCHED_PATH : request.url.split('?', 1)[0]!),
    }),
    // Statements keep their $n placeholders; the parameters' values are never recorded.
    new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true }),
  ];
}
