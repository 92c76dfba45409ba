// What runs a job in this process, without the service around it: the core, the worker-thread pool
// and COLUMNS_FILE. The CLI imports this instead of the package's root, which also loads BullMQ,
// ioredis, the S3 SDK, pino and prom-client: that was about a third of a second of every `censo`
// run before its first file was opened, and in `lote` time that one thread spent alone.
export * from './core/index.js';
export { BATCH_NICENESS, createJobPool, JOB_HEAP_LIMIT_MB, type JobPool, type JobPoolOptions, type LotePool } from './runtime/job-pool.js';
export * from './runtime/columns-file.js';
export { ConfigError } from './runtime/config.js';
