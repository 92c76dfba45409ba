// Queue mode's adapter of the TaskExecution port: asynchronous tasks' jobs go on a queue of their
// own (TASK_QUEUE), which the workers run on threads of their own at a lower OS priority, so a
// burst never holds a synchronous request's slot or thread (SPEC §7.5). An API from before that
// queue put its tasks on the synchronous queue with a priority: those are still found there
// (`legacy`) while a rolling upgrade is under way, and run by the same workers.
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

/** The priority an API from before TASK_QUEUE gave tasks on the synchronous queue (legacy jobs are told by it). */
export const LEGACY_TASK_PRIORITY = 10;

/** Finished task jobs not taken by any API (all of them down for that long) still go eventually. */
const KEEP_FINISHED_S = 7 * 24 * 3_600;
const TASK_JOB_OPTIONS = {
  ...JOB_OPTIONS,
  removeOnComplete: { age: KEEP_FINISHED_S },
  removeOnFail: { age: KEEP_FINISHED_S },
} as const;

const COMMAND_TIMEOUT_MS = 3_000;

/** A queue, how to cancel its running jobs, and its events. */
export interface TaskQueue {
  readonly queue: Queue<JobData, JobResult>;
  readonly cancels: QueueEventsProducer;
  readonly events: QueueEvents;
}

export interface BullmqTaskDeps extends TaskQueue {
  /** The synchronous queue, where an API from before TASK_QUEUE queued its tasks. */
  readonly legacy: TaskQueue;
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

export function createBullmqTaskExecution({ queue, cancels, events, legacy, log, connected }: BullmqTaskDeps): TaskExecution {
  const redis = bounded(connected);
  const listeners: ((id: string) => void)[] = [];
  const notify = ({ jobId }: { jobId: string }) => {
    for (const listener of listeners) listener(jobId);
  };
  for (const source of [events, legacy.events]) {
    source.on('completed', notify);
    source.on('failed', notify);
  }
  const own: TaskQueue = { queue, cancels, events };

  /** Tasks whose jobs were found on the legacy queue (a rolling upgrade's few), so `forget` removes them there. */
  const onLegacy = new Set<string>();

  /** Where task `id`'s job is, with its state: its own queue, else the legacy one, else nowhere. */
  async function locate(id: string): Promise<{ at: TaskQueue; state: string } | null> {
    const state = await queue.getJobState(id);
    if (state !== 'unknown') return { at: own, state };
    const old = await legacy.queue.getJobState(id);
    if (old === 'unknown') return null;
    onLegacy.add(id);
    return { at: legacy, state: old };
  }

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
        const found = await locate(id);
        if (found === null) return { state: 'missing' };
        const { at, state } = found;
        if (state !== 'completed' && state !== 'failed' && state !== 'active') return { state: 'waiting' }; // waiting, prioritized, delayed
        const job = await Job.fromId<JobData, JobResult>(at.queue, id);
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
        const at = (await locate(id))?.at ?? own;
        if ((await at.queue.remove(id)) === 1) return;
        await at.cancels.publishEvent({ eventName: CANCEL_EVENT, jobId: id }, EVENTS_MAX_LEN);
      });
    },

    async forget(id) {
      // Its end was read from the job just before (inspect), which told where the job is.
      await redis(() => (onLegacy.has(id) ? legacy.queue : queue).remove(id));
      onLegacy.delete(id);
    },

    async waiting() {
      return redis(async () => {
        const [mine, old] = await Promise.all([queue.getWaitingCount(), legacy.queue.getPrioritizedCount()]);
        return mine + old;
      });
    },

    async running() {
      const [mine, old] = await redis(() => Promise.all([queue.getActive(), legacy.queue.getActive()]));
      const out = new Map<string, number>();
      for (const job of mine) if (job.id) out.set(job.id, job.processedOn ?? Date.now());
      for (const job of old) if (job.id && job.opts.priority === LEGACY_TASK_PRIORITY) out.set(job.id, job.processedOn ?? Date.now());
      return out;
    },

    onSettled(listener) {
      listeners.push(listener);
    },

    async close() {
      for (const source of [events, legacy.events]) {
        source.off('completed', notify);
        source.off('failed', notify);
      }
    },
  };
}
