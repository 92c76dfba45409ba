// Public surface of the worker package: the API starts a worker in-process under `npm start` with
// REDIS_URL set, and tests import the processor factory. The queue contract is in @censo/shared.
export { createProcessor, type JobProcessor, type ProcessorOptions } from './processor.js';
export { startWorker, type RunningWorker, type StartWorkerOptions } from './worker.js';
export { startHealthServer, type WorkerHealthServer } from './health-server.js';
