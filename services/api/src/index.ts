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
export { embeddedTaskBackend, type TaskBackend } from './jobs/task-backend.js';
export { queueTaskBackend } from './jobs/queue-task-backend.js';
export { jsonListItems } from './routes/tarefas/results.js';
export { deliverWebhook, checkWebhookDestination, parseWebhookUrl, webhookSignature } from './tarefas/webhooks.js';
// The store's two adapters, for the contract suite that holds them to one behaviour (test/integration/tarefas-store-contract.test.ts).
export { createMemoryStore } from './tarefas/store-memory.js';
export { createRedisStore } from './tarefas/store-redis.js';
export type { TarefaStore } from './tarefas/store.js';
