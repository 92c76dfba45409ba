// A worker process's threads of one kind (the synchronous requests' pool, or the tasks'), counted
// across its shards (QUEUE_SHARDS). Each shard's BullMQ worker takes up to WORKER_CONCURRENCY
// jobs, as it must when it is the only one with work; with several shards busy they would take
// more jobs than the pool has threads, and a job taken but waiting for a thread reads as
// `processando` and is out of the reach of idle workers elsewhere. So a shard's job that finds
// every thread taken goes back to its queue at once (as a job of a newer contract does), and its
// shard takes no other until a thread frees or its wait ends (an eighth of the lock's duration:
// BullMQ would renew the lock of the job it gave back a quarter of that duration after taking it).
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a freed thread is left to the shard that freed it before a waiting shard is woken for it. */
const HANDOFF_MS = 25;

export class Threads {
  #taken = 0;
  #waiters: Array<() => void> = [];

  /** `size` threads; Infinity counts without a bound (one shard). */
  constructor(readonly size: number) {}

  /** Jobs of this kind running in the process now. */
  get taken(): number {
    return this.#taken;
  }

  /** Takes a thread when one is free; false when every one is taken. */
  tryTake(): boolean {
    if (this.#taken >= this.size) return false;
    this.#taken++;
    return true;
  }

  /**
   * Gives a thread back. A shard waiting for one is woken a moment later, and only if the thread is
   * still free then: the shard that gave it back takes its next job at once when its queue has one
   * (BullMQ fetches it with the end of the last), and waking another for the same thread would
   * only make it fetch a job and hand it back (issue 55: some four Redis calls a file). One shard,
   * not all: the others would only hand back again.
   */
  release(): void {
    this.#taken--;
    if (this.#waiters.length === 0) return;
    setTimeout(() => {
      if (this.#taken < this.size) this.#waiters.shift()?.();
    }, HANDOFF_MS).unref();
  }

  /** Resolves when a thread is given back, after `maxMs`, or when `signal` aborts, whichever comes first. */
  async freed(maxMs: number, signal?: AbortSignal): Promise<void> {
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.#waiters.push(wake);
    const timer = new AbortController();
    try {
      await Promise.race([
        woken,
        sleep(maxMs, undefined, { signal: signal ? AbortSignal.any([signal, timer.signal]) : timer.signal }).catch(() => undefined),
      ]);
    } finally {
      timer.abort();
      this.#waiters = this.#waiters.filter((waiter) => waiter !== wake);
    }
  }

  /** Wakes every waiting shard (the worker closes). */
  wakeAll(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}
