// What runs the core in a process: settings from the environment, logging, credentials, the
// worker-thread pool, deadlines and the fixed HTTP messages.
export * from './config.js';
export * from './columns-file.js';
export * from './setting-file.js';
export * from './logger.js';
export * from './telemetry.js';
export * from './credentials.js';
export * from './job-pool.js';
export * from './job-metrics.js';
export * from './timeouts.js';
export * from './http-messages.js';
