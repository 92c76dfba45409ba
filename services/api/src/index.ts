export { buildApp, type AppDeps } from './app.js';
export { createInProcessRunner } from './jobs/in-process.js';
export type { JobRunner, RunOptions } from './jobs/runner.js';
export { requireApiKey } from './http/auth.js';
export { MAX_FILE_BYTES } from './http/uploads.js';
export { startServer, closeOnSignals, type RunningServer, type Role } from './server.js';
export { createQueryService, type QueryService, type QueryPage, type QueryListing } from './query/service.js';
export { queryRoutes } from './routes/query.js';
export { loadCatalog } from './query/catalog.js';
export { errorsPlugin } from './plugins/errors.js';
export { createBullmqRunner, type BullmqRunner } from './jobs/bullmq.js';
export { createQueueRunner } from './jobs/sharded.js';
export { embeddedTaskBackend, type TaskBackend } from './jobs/task-backend.js';
export { queueTaskBackend } from './jobs/queue-task-backend.js';
// A receiver checks a delivery's signature with the function the service signs with.
export { webhookSignature } from './tarefas/webhooks.js';
// The seams the tests reach through (the stores' adapters, the maintenance loop, the webhook
// delivery) are in ./testing.ts, the package's `@censo/api/testing` entry, not here.
