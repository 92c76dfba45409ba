// Public surface of the core. Each module appends its own exports here.
export * from './config.js';
export * from './errors.js';
export * from './normalize.js';
export * from './types.js';
