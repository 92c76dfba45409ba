// The requests waiting for their jobs, by job id: what the BullMQ runner's one QueueEvents
// subscription settles. Each wait has the request's deadline and follows its abort signal; the
// jobs' states are read back (reconcile) whenever asked and every few seconds while anyone
// waits, so an event missed across a reconnect, or a stream trimmed meanwhile, cannot leave a
// request hanging.
import { JobTimeoutError, QueueUnavailableError, type JobResult, type Logger } from '@censo/shared';

/** A job that failed for good (bug or infrastructure, after its attempts): a 500 for the client. */
export class JobFailedError extends Error {
  constructor(
    readonly jobId: string,
    reason: string,
  ) {
    super(`job ${jobId} failed: ${reason}`);
    this.name = 'JobFailedError';
  }
}

/** What Redis says of a job, for reconcile. */
export type JobState =
  | { readonly state: 'completed'; readonly result: JobResult }
  | { readonly state: 'failed'; readonly reason: string }
  | { readonly state: 'missing' }
  | { readonly state: 'pending' };

/** Why a wait ended without a result, for the runner to remove or cancel the job. */
export type AbandonReason = 'request aborted' | 'deadline passed' | 'enqueue failed' | 'api closing';

export interface JobWaitersOptions {
  readonly readState: (jobId: string) => Promise<JobState>;
  /** Called when a wait ends before its job: the job must not run for nobody. */
  readonly abandon: (jobId: string, why: AbandonReason) => void;
  readonly log: Pick<Logger, 'debug'>;
  readonly reconcileEveryMs: number;
}

interface Waiter {
  /** Set once the job is in the queue: before that, a missing job is not a lost one. */
  enqueued: boolean;
  succeed(result: JobResult): void;
  fail(err: Error): void;
}

/** The handle of one wait: the producer reports how its enqueue went. */
export interface JobWait {
  readonly result: Promise<JobResult>;
  enqueued(): void;
  enqueueFailed(err: Error): void;
}

export class JobWaiters {
  readonly #waiters = new Map<string, Waiter>();
  readonly #options: JobWaitersOptions;
  #sweeper: NodeJS.Timeout | null = null;
  #reconciling: Promise<void> | null = null;

  constructor(options: JobWaitersOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#waiters.size;
  }

  /**
   * Starts waiting for job `id` before it exists, so its completion cannot slip between the
   * enqueue and the wait.
   */
  wait(id: string, signal: AbortSignal, deadline: number): JobWait {
    let resolve!: (result: JobResult) => void;
    let reject!: (err: unknown) => void;
    const result = new Promise<JobResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const finish = (settle: () => void): void => {
      if (this.#waiters.get(id) !== waiter) return; // already settled
      this.#untrack(id, waiter);
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      settle();
    };
    const giveUp = (err: unknown, why: AbandonReason): void => {
      finish(() => reject(err));
      this.#options.abandon(id, why);
    };
    const onAbort = (): void => giveUp(signal.reason, 'request aborted');
    const waiter: Waiter = {
      enqueued: false,
      succeed: (value) => finish(() => resolve(value)),
      fail: (err) => finish(() => reject(err)),
    };
    const timer = setTimeout(() => giveUp(new JobTimeoutError(), 'deadline passed'), Math.max(0, deadline - Date.now()));
    this.#track(id, waiter);
    signal.addEventListener('abort', onAbort, { once: true });
    return {
      result,
      enqueued: () => {
        waiter.enqueued = true;
      },
      // A timed-out add may still land later; abandoning it keeps it from running at all.
      enqueueFailed: (err) => giveUp(err, 'enqueue failed'),
    };
  }

  completed(jobId: string, result: JobResult): void {
    this.#waiters.get(jobId)?.succeed(result);
  }

  failed(jobId: string, reason: string): void {
    this.#waiters.get(jobId)?.fail(new JobFailedError(jobId, reason));
  }

  /** Ends every wait with `err` and abandons its job (the runner is closing). */
  failAll(err: () => Error): void {
    for (const [jobId, waiter] of [...this.#waiters]) {
      waiter.fail(err());
      this.#options.abandon(jobId, 'api closing');
    }
  }

  /** Reads back the state of every enqueued job still waited for; one pass at a time. */
  reconcile(): Promise<void> {
    if (!this.#reconciling) {
      const pass = this.#reconcilePass();
      this.#reconciling = pass;
      // Cleared once the pass has settled, never before it is stored: a pass with nothing to
      // read settles at once, and clearing inside it would leave it stored for good.
      void pass.finally(() => {
        if (this.#reconciling === pass) this.#reconciling = null;
      });
    }
    return this.#reconciling;
  }

  async #reconcilePass(): Promise<void> {
    try {
      for (const [jobId, waiter] of this.#waiters) {
        if (!waiter.enqueued) continue;
        const read = await this.#options.readState(jobId);
        if (this.#waiters.get(jobId) !== waiter) continue; // settled meanwhile
        if (read.state === 'completed') waiter.succeed(read.result);
        else if (read.state === 'failed') waiter.fail(new JobFailedError(jobId, read.reason));
        // Removed although it was enqueued and nobody else removes it before it finishes: the
        // queue lost it (a failover to a replica that had not received it yet) or its record
        // was deleted. Nothing will ever settle this wait; like an unreachable queue, a 503.
        else if (read.state === 'missing') waiter.fail(new QueueUnavailableError());
      }
    } catch (err) {
      this.#options.log.debug({ err }, 'could not read job states (redis unavailable?)');
    }
  }

  #track(jobId: string, waiter: Waiter): void {
    this.#waiters.set(jobId, waiter);
    this.#sweeper ??= setInterval(() => void this.reconcile(), this.#options.reconcileEveryMs).unref();
  }

  #untrack(jobId: string, waiter: Waiter): void {
    if (this.#waiters.get(jobId) === waiter) this.#waiters.delete(jobId);
    if (this.#waiters.size === 0 && this.#sweeper) {
      clearInterval(this.#sweeper);
      this.#sweeper = null;
    }
  }
}
