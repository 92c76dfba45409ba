// Where asynchronous tasks' jobs run, below the synchronous ones (SPEC §7.5): the port, and its
// embedded adapter (queue mode's is in jobs/bullmq.ts, beside the synchronous runner it shares a
// queue with). The task's state is read from here (the job) and from the task's record, never
// from an event stream: events only say "look now".
import { JobTimeoutError, type JobData, type JobResult } from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';

/** A task as its executor knows it: its id, and the group job that carries it, if one does. */
export interface TaskRef {
  readonly id: string;
  readonly grupo?: string | null;
}

/** A task's job to queue (its group's, with the others of the same `grupo`). */
export interface QueuedTask extends TaskRef {
  readonly data: JobData;
}

/** What the job of a task is doing, as far as the executor knows. */
export type JobObservation =
  | { readonly state: 'waiting' }
  | { readonly state: 'active'; readonly startedAt: number }
  | { readonly state: 'done'; readonly startedAt: number | null; readonly finishedAt: number; readonly result: JobResult }
  | {
      readonly state: 'failed';
      readonly startedAt: number | null;
      readonly finishedAt: number;
      /** cancelled: stopped on request; timeout: ran past JOB_TIMEOUT_MS; error: crashed for good. */
      readonly why: 'cancelled' | 'timeout' | 'error';
    }
  | { readonly state: 'missing' };

export interface TaskExecution {
  readonly mode: 'in-process' | 'bullmq';
  /** Most tasks one job may carry (TAREFAS_POR_JOB): 1 means a job per task, and no task has a `grupo`. */
  readonly groupSize: number;
  /** Queues the jobs of these tasks, all or none (QueueUnavailableError when it cannot): one round trip for a request's tasks. */
  submit(jobs: readonly QueuedTask[]): Promise<void>;
  inspect(task: TaskRef): Promise<JobObservation>;
  /** The same for several tasks, in their order (a group's in one look). */
  inspectAll(tasks: readonly TaskRef[]): Promise<JobObservation[]>;
  /** Removes a waiting job, stops a running one; nothing for a finished or unknown one. */
  cancel(task: TaskRef): Promise<void>;
  /** Their jobs' ends have been recorded: their traces in the executor can go. */
  forget(tasks: readonly TaskRef[]): Promise<void>;
  /** Tasks' jobs waiting to run (MAX_QUEUED_TAREFAS, metrics). */
  waiting(): Promise<number>;
  /** Ids of the tasks whose jobs run now (a batch's `processando`), with when each started. */
  running(): Promise<Map<string, number>>;
  /** Called with a task id when its job may have ended: a hint, never the only way to know. */
  onSettled(listener: (id: string) => void): void;
  close(): Promise<void>;
}

interface EmbeddedJob {
  readonly data: JobData;
  observation: JobObservation;
  controller: AbortController | null;
  /** Its end needs no recording (recorded already, or the task is gone): dropped once it stops. */
  forgotten: boolean;
}

/**
 * Embedded: a FIFO of its own in front of the in-process runner, starting at most `concurrency`
 * jobs at a time, so a burst of tasks never fills the pool's queue that synchronous requests use
 * (and a synchronous job waits at most for one running task per thread). Forgotten on restart.
 */
export function createEmbeddedExecution(runner: JobRunner, options: { concurrency: number; jobTimeoutMs: number }): TaskExecution {
  const jobs = new Map<string, EmbeddedJob>();
  const queue: string[] = [];
  const listeners: ((id: string) => void)[] = [];
  let running = 0;
  let closed = false;

  const settle = (id: string, job: EmbeddedJob, observation: JobObservation) => {
    job.observation = observation;
    job.controller = null;
    running--;
    if (job.forgotten) jobs.delete(id);
    pump();
    for (const listener of listeners) listener(id);
  };

  function start(id: string, job: EmbeddedJob): void {
    const startedAt = Date.now();
    const controller = new AbortController();
    job.controller = controller;
    job.observation = { state: 'active', startedAt };
    running++;
    runner.run(job.data, { signal: controller.signal, id, deadline: startedAt + options.jobTimeoutMs }).then(
      (result) => settle(id, job, { state: 'done', startedAt, finishedAt: Date.now(), result }),
      (err: unknown) => {
        const why = controller.signal.aborted ? 'cancelled' : err instanceof JobTimeoutError ? 'timeout' : 'error';
        settle(id, job, { state: 'failed', startedAt, finishedAt: Date.now(), why });
      },
    );
  }

  function pump(): void {
    while (!closed && running < options.concurrency && queue.length > 0) {
      const id = queue.shift()!;
      const job = jobs.get(id);
      if (job?.observation.state === 'waiting') start(id, job);
    }
  }

  return {
    mode: 'in-process',
    // One thread's FIFO in this process: nothing to share between tasks.
    groupSize: 1,
    async submit(submitted) {
      for (const { id, data } of submitted) {
        jobs.set(id, { data, observation: { state: 'waiting' }, controller: null, forgotten: false });
        queue.push(id);
      }
      pump();
    },
    async inspect({ id }) {
      return jobs.get(id)?.observation ?? { state: 'missing' };
    },
    async inspectAll(tasks) {
      return tasks.map(({ id }) => jobs.get(id)?.observation ?? { state: 'missing' });
    },
    async cancel({ id }) {
      const job = jobs.get(id);
      if (!job) return;
      if (job.observation.state === 'waiting') {
        jobs.delete(id);
        const at = queue.indexOf(id);
        if (at >= 0) queue.splice(at, 1);
      } else if (job.observation.state === 'active') {
        job.forgotten = true;
        job.controller?.abort(new Error('task cancelled'));
      } else {
        jobs.delete(id);
      }
    },
    async forget(tasks) {
      for (const { id } of tasks) {
        const job = jobs.get(id);
        if (!job) continue;
        if (job.observation.state === 'active') job.forgotten = true;
        else if (job.observation.state !== 'waiting') jobs.delete(id);
      }
    },
    async waiting() {
      return queue.length;
    },
    async running() {
      const out = new Map<string, number>();
      for (const [id, job] of jobs) if (job.observation.state === 'active') out.set(id, job.observation.startedAt);
      return out;
    },
    onSettled(listener) {
      listeners.push(listener);
    },
    async close() {
      closed = true;
      for (const job of jobs.values()) job.controller?.abort(new Error('closing'));
    },
  };
}
