// Public surface of @censo/shared, in four layers: core (pure), runtime (process concerns), the
// queue (the BullMQ contract) and storage (where uploads live). The core imports none of the others.
export * from './core/index.js';
export * from './runtime/index.js';
export * from './queue/index.js';
export * from './storage/index.js';
