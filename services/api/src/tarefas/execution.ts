// Where asynchronous tasks' jobs run, below the synchronous ones (SPEC §7.5): the domain's port.
// Its adapters are in jobs/: embedded-tasks.ts (the in-process pool) and bullmq-tasks.ts (the
// queue). The task's state is read from here (the job) and from the task's record, never from an
// event stream: events only say "look now".
import type { JobData, JobResult } from '@censo/shared';
import { newId } from './model.js';

/**
 * New ids for one request's tasks (`prefix` '') and group jobs (GROUP_ID_PREFIX): each call a
 * fresh id as newId makes them, behind the prefix.
 */
export type NewIds = (prefix?: string) => string;

/** Ids that promise nothing about where their jobs go: one queue has nowhere else to put them. */
export const freshIds: NewIds = (prefix = '') => `${prefix}${newId()}`;

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
  /**
   * Most tasks one job may carry now: TAREFAS_POR_JOB when every live worker reads group jobs
   * (idle workers then share a running group's tasks, task-groups.ts), else 1 (a job per task,
   * and no task has a `grupo`). The workers are read by the adapter at most every few seconds.
   */
  groupSize(): Promise<number>;
  /**
   * Where one request's new ids come from: every job an id of one source names goes to the same
   * queue, so the request's submit is one queue's, all or none by itself. Over several queues
   * (QUEUE_SHARDS) a request split between them could only be undone by cancelling the part one
   * queue took, and a worker may have run it by then.
   */
  idSource(): NewIds;
  /**
   * Housekeeping: gives a waiting job that no live worker reads (a rollback left it behind) the
   * contract of this API's own jobs, when the live workers read that (SPEC §12). Never throws.
   */
  rescue?(): Promise<void>;
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
