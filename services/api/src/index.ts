export { buildApp, type AppDeps } from './app.js';
export { createInProcessRunner, type JobExecutor } from './jobs/in-process.js';
export type { JobRunner, RunOptions } from './jobs/runner.js';
export { createKeyMatcher } from './plugins/auth.js';
export { MAX_FILE_BYTES } from './plugins/uploads.js';
export { startServer, closeOnSignals, type RunningServer, type Role } from './server.js';
