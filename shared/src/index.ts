// Public surface of the core. Each module appends its own exports here.
export * from './config.js';
export * from './errors.js';
export * from './normalize.js';
export * from './types.js';
export * from './retorno/index.js';
export * from './logger.js';
export * from './censo/decode.js';
export * from './censo/txt.js';
export * from './dates.js';
export * from './divergencias.js';
export * from './merge.js';
export * from './job.js';
export * from './job-pool.js';
export * from './credentials.js';
export * from './timeouts.js';
