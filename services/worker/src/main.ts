// Entry point of `npm run start:worker`: the worker role alone (SPEC §6). Any number of these
// can run against one REDIS_URL and one shared UPLOAD_DIR volume or S3 bucket.
// Tracing starts before anything it instruments is loaded (ioredis, the S3 client): the rest is
// imported below, dynamically, once it has. Off (no OTLP endpoint), this loads @opentelemetry/api alone.
import { startTelemetry, type RunningTelemetry } from '@censo/shared/telemetry';
import type { Config } from '@censo/shared';
import type { WorkerHealthServer } from './health-server.js';
import type { RunningWorker } from './worker.js';

let telemetry: RunningTelemetry;
try {
  telemetry = await startTelemetry(process.env, { serviceName: 'censo-worker' });
} catch (err) {
  // A ConfigError (an invalid OTEL_* value); the class itself comes with the rest of @censo/shared.
  if (!(err instanceof Error && err.name === 'ConfigError')) throw err;
  process.stderr.write(`censo-worker: invalid configuration: ${err.message}\n`);
  process.exit(1);
}

const { default: closeWithGrace } = await import('close-with-grace');
const { ConfigError, NOT_A_STOP, createLogger, handleOperatorSignals, loadConfig } = await import('@censo/shared');
const { startHealthServer } = await import('./health-server.js');
const { startWorker } = await import('./worker.js');

let config: Config;
try {
  config = loadConfig(process.env);
  if (!config.redis)
    throw new ConfigError('REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES is required to run a worker (npm run start:worker)');
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`censo-worker: invalid configuration: ${err.message}\n`);
  process.exit(1);
}

const log = createLogger(config, { role: 'worker' });
if (telemetry.enabled) log.info('tracing on (OpenTelemetry, OTLP)');
let running: RunningWorker | undefined;
let health: WorkerHealthServer | null = null;

// Signals are handled from the start: a SIGTERM that arrives while the worker is still starting
// (it logs 'worker started' a moment before this module goes on) must close it, not kill it.
// The worker drains for at most min(JOB_TIMEOUT_MS, 20 s), then hands jobs back (5 s more);
// close-with-grace exits hard a little after that, whatever happens. The operator's signals
// (a heap snapshot, a diagnostic report, SIGHUP) are not requests to stop.
closeWithGrace({ delay: Math.min(config.jobTimeoutMs, 20_000) + 10_000, logger: log, skip: NOT_A_STOP }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an unexpected error');
  else log.info({ signal }, 'closing');
  await running?.close();
  await health?.close();
  // The last jobs' spans go out before the process ends.
  await telemetry.shutdown().catch((err: unknown) => log.warn({ err }, 'the last spans could not be sent'));
});
// The worker logs to stdout only: SIGHUP has nothing to reopen, and is logged.
handleOperatorSignals(log);

try {
  running = await startWorker(config, log);
} catch (err) {
  // COLUMNS_FILE is read when the worker's pool starts: a bad one is a setting error too.
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`censo-worker: invalid configuration: ${err.message}\n`);
  process.exit(1);
}
if (config.portFromEnv) health = await startHealthServer(config, running, log);
