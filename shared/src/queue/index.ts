// The queue contract the API (producer) and the worker (consumer) both import.
export * from './contract.js';
export * from './task-groups.js';
export * from './readers.js';
export * from './addressed.js';
export * from './connection.js';
export * from './shards.js';
export { MasterSwitchWatcher, parseSwitch } from './master-switch.js';
