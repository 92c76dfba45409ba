// Public surface of the worker package: the API imports the queue contract from here (it runs a
// worker in-process under `npm start`), and tests import the processor factory.
export * from './queue.js';
export { createProcessor, type JobExecutor, type JobProcessor, type ProcessorOptions } from './processor.js';
export { startWorker, workerConnection, throttledErrorLog, closeQueueEvents, type RunningWorker, type StartWorkerOptions } from './worker.js';
export { startHealthServer, type WorkerHealthServer } from './health-server.js';
