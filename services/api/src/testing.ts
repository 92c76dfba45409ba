// `@censo/api/testing`: the seams the suite reaches through, apart from the package's public
// surface (index.ts, what an integrator builds on). Nothing here is a promise to integrators.

// The store's two adapters, for the contract suite that holds them to one behaviour (test/integration/tarefas-store-contract.test.ts).
export { createMemoryStore } from './tarefas/store-memory.js';
export { createRedisStore } from './tarefas/store-redis.js';
export type { TarefaStore } from './tarefas/store.js';
// The maintenance loop's back-off, driven by a fake service (test/unit/maintenance-backoff.test.ts),
// and the reconciler on a service over the memory store (test/unit/reconciler-fresh-ends.test.ts).
export { Maintenance, MAX_QUIET_SKIP, MISSED_END_MS } from './tarefas/maintenance.js';
export { TarefasService } from './tarefas/service.js';
export type { JobObservation, TaskExecution } from './tarefas/execution.js';
export type { TarefaRecord } from './tarefas/model.js';
// The webhook delivery and its destination checks, without a task behind them (test/unit/webhook-address.test.ts, test/http/tarefas-webhooks.test.ts).
export { deliverWebhook, checkWebhookDestination, parseWebhookUrl } from './tarefas/webhooks.js';
// A task's JSON result read back item by item (test/unit/tarefas-output.test.ts).
export { jsonListItems } from './routes/tarefas/results.js';
