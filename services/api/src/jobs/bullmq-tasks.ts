// Queue mode's adapter of the TaskExecution port: asynchronous tasks' jobs go on the same BullMQ
// queue as the synchronous ones, with a priority. BullMQ runs jobs without a priority before any
// prioritized one, so the synchronous requests (no priority) stay ahead of a burst of tasks.
//
// A task's job keeps its outcome in Redis until the task's record has taken it (`forget`), so an
// API that was down, or missed the `completed` event, still reads it from the job later.
import { Job, type Queue, type QueueEvents, type QueueEventsProducer } from 'bullmq';
import {
  ABORT_CANCELLED,
  CANCEL_EVENT,
  EVENTS_MAX_LEN,
  JOB_OPTIONS,
  QueueUnavailableError,
  UPLOAD_GONE,
  withContract,
  withTimeout,
  type JobData,
  type JobResult,
  type Logger,
} from '@censo/shared';
import type { JobObservation, TaskExecution } from '../tarefas/execution.js';

/** BullMQ priorities run 1 first; every task has the same one, below the unprioritised synchronous jobs. */
export const TASK_PRIORITY = 10;

/** Finished task jobs not taken by any API (all of them down for that long) still go eventually. */
const KEEP_FINISHED_S = 7 * 24 * 3_600;
const TASK_JOB_OPTIONS = {
  ...JOB_OPTIONS,
  priority: TASK_PRIORITY,
  removeOnComplete: { age: KEEP_FINISHED_S },
  removeOnFail: { age: KEEP_FINISHED_S },
} as const;

const COMMAND_TIMEOUT_MS = 3_000;

export interface BullmqTaskDeps {
  readonly queue: Queue<JobData, JobResult>;
  readonly cancels: QueueEventsProducer;
  readonly events: QueueEvents;
  readonly log: Logger;
  /** Whether Redis can take a command now (else 503 at once). */
  readonly connected: () => Promise<boolean>;
}

/**
 * BullMQ's queue calls wait for their connection to come back, however long Redis is away: a
 * request (or a housekeeping pass) must get its 503 instead, at once when Redis is known to be
 * down and within a few seconds otherwise.
 */
function bounded(connected: () => Promise<boolean>) {
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (!(await connected())) throw new QueueUnavailableError();
    try {
      return await withTimeout(work(), COMMAND_TIMEOUT_MS);
    } catch (err) {
      throw err instanceof QueueUnavailableError ? err : new QueueUnavailableError({ cause: err });
    }
  };
}

export function createBullmqTaskExecution({ queue, cancels, events, log, connected }: BullmqTaskDeps): TaskExecution {
  const redis = bounded(connected);
  const listeners: ((id: string) => void)[] = [];
  const notify = ({ jobId }: { jobId: string }) => {
    for (const listener of listeners) listener(jobId);
  };
  events.on('completed', notify);
  events.on('failed', notify);

  return {
    mode: 'bullmq',

    async submit(jobs) {
      try {
        // addBulk: one MULTI for the request's jobs, all of them or none.
        await redis(() =>
          queue.addBulk(
            jobs.map(({ id, data }) => ({ name: data.kind, data: withContract(data), opts: { ...TASK_JOB_OPTIONS, jobId: id } })),
          ),
        );
      } catch (err) {
        log.warn({ err, tarefas: jobs.map((job) => job.id) }, 'could not enqueue task');
        // They may still land after the timeout: none must run for a task that does not exist.
        for (const { id } of jobs) void queue.remove(id).catch(() => undefined);
        throw new QueueUnavailableError({ cause: err });
      }
    },

    async inspect(id): Promise<JobObservation> {
      return redis(async () => {
        // The state first, then the job: a job read first could have finished in between, and
        // would then show a finished state with its result not yet in the copy read.
        const state = await queue.getJobState(id);
        if (state === 'unknown') return { state: 'missing' };
        if (state !== 'completed' && state !== 'failed' && state !== 'active') return { state: 'waiting' }; // waiting, prioritized, delayed
        const job = await Job.fromId<JobData, JobResult>(queue, id);
        if (!job) return { state: 'missing' };
        const startedAt = job.processedOn ?? null;
        if (state === 'active') return { state: 'active', startedAt: startedAt ?? Date.now() };
        const finishedAt = job.finishedOn ?? Date.now();
        if (state === 'completed') return { state: 'done', startedAt, finishedAt, result: job.returnvalue };
        const cancelled = job.failedReason === ABORT_CANCELLED || job.failedReason === UPLOAD_GONE;
        return { state: 'failed', startedAt, finishedAt, why: cancelled ? 'cancelled' : 'error' };
      });
    },

    async cancel(id) {
      await redis(async () => {
        // A waiting job is removed; a running one is locked by its worker, which stops it on this event.
        if ((await queue.remove(id)) === 1) return;
        await cancels.publishEvent({ eventName: CANCEL_EVENT, jobId: id }, EVENTS_MAX_LEN);
      });
    },

    async forget(id) {
      await redis(() => queue.remove(id));
    },

    async waiting() {
      return redis(() => queue.getPrioritizedCount());
    },

    async running() {
      const active = await redis(() => queue.getActive());
      const out = new Map<string, number>();
      for (const job of active) if (job.id && (job.opts.priority ?? 0) > 0) out.set(job.id, job.processedOn ?? Date.now());
      return out;
    },

    onSettled(listener) {
      listeners.push(listener);
    },

    async close() {
      events.off('completed', notify);
      events.off('failed', notify);
    },
  };
}
