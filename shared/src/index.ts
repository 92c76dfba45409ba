// Public surface of @censo/shared, in three layers: core (pure), runtime (process concerns) and
// queue (the BullMQ contract). The core never imports from the other two.
export * from './core/index.js';
export * from './runtime/index.js';
export * from './queue/index.js';
