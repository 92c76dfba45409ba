#!/usr/bin/env node
// Entry point of `npm start` (API + jobs) and `npm run start:api` (`--role=api`).
import './heap-tuning.js'; // first: the collector's settings apply before the heap grows
import { ConfigError, createLogger, handleOperatorSignals, loadConfig } from '@censo/shared';
import { reopenAccessLogs } from './auth/access-log.js';
import { closeOnSignals, startServer, type Role, type RunningServer } from './server.js';

const role: Role = process.argv.includes('--role=api') ? 'api' : 'all';

function fail(message: string): never {
  console.error(`censo-api: ${message}`);
  process.exit(1);
}

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
// Signals are handled from the start, so a SIGTERM during start-up closes what has started.
let server: RunningServer | undefined;
closeOnSignals({ close: async () => server?.close() }, logger);
// SIGHUP reopens ACCESS_LOG; a heap snapshot or a diagnostic report on signal leaves it serving.
handleOperatorSignals(logger, { reopen: reopenAccessLogs });
try {
  server = await startServer(config, role, logger);
} catch (err) {
  fail(`could not start: ${err instanceof Error ? err.message : String(err)}`);
}
