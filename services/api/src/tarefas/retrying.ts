// Read-compute-commit, again while another request or replica changed what was read (service.ts):
// an attempt returns RETRY when its guarded commit lost, and is run again, a bounded number of times.
import { setTimeout as sleep } from 'node:timers/promises';

/** What an attempt returns when its commit lost to another writer. */
export const RETRY = Symbol('retry');

/** Bound on the attempts of one commit under contention (a batch's record, hot during a burst). */
const MAX_ATTEMPTS = 200;

/** The store's records stayed contended for every attempt (TarefasService.agora answers without recording). */
export class StoreContentionError extends Error {
  constructor() {
    super('store contention: gave up after many attempts');
  }
}

export async function retrying<T>(attempt: () => Promise<T | typeof RETRY>): Promise<T> {
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    const result = await attempt();
    if (result !== RETRY) return result;
    // Past the first few conflicts, writers that keep meeting step apart (a random pause that
    // grows to 20 ms) instead of rereading in lockstep.
    if (i >= 2) await sleep(Math.random() * Math.min(20, i));
  }
  throw new StoreContentionError();
}
