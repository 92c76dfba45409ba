// Queue mode's adapter of the TaskExecution port: asynchronous tasks' jobs go on a queue of their
// own (TASK_QUEUE), which the workers run on threads of their own at a lower OS priority, so a
// burst never holds a synchronous request's slot or thread (SPEC §7.5). An API from before that
// queue put its tasks on the synchronous queue with a priority: those are still found there
// (`legacy`) while a rolling upgrade is under way, and run by the same workers.
//
// A task's job keeps its outcome in Redis until the task's record has taken it (`forget`), so an
// API that was down, or missed the `completed` event, still reads it from the job later. A task
// carried by a group job (TAREFAS_POR_JOB) keeps it in its field of the group's hash instead
// (task-groups.ts); the group's job goes once its last task is forgotten.
//
// Group jobs are queued only while every worker connected to the tasks' queue has announced that
// it reads them (readers.ts, SPEC §12): otherwise a request's tasks get a job each, as with
// TAREFAS_POR_JOB=1. And a job that a worker gave back because it reads no such contract, while no
// live worker does (a rollback), is relabelled with this API's own contract when they read that
// (group-handshake.ts).
import { Job, type Queue } from 'bullmq';
import {
  ABORT_CANCELLED,
  GROUP_ID_PREFIX,
  GROUP_JOB,
  throttledErrorLog,
  JOB_OPTIONS,
  TASK_QUEUE,
  WAITING_ITEM,
  droppedOf,
  groupKeys,
  groupScripts,
  parseItem,
  type GroupItemState,
  type GroupJobData,
  type GroupSummary,
  type QueuedJobData,
  type RedisClient,
  QueueUnavailableError,
  UPLOAD_GONE,
  withContract,
  withTimeout,
  type JobData,
  type JobResult,
  type Logger,
} from '@censo/shared';
import { freshIds, type JobObservation, type QueuedTask, type TaskExecution, type TaskRef } from '../tarefas/execution.js';
import { sendCancel, sendCancelTo, type CancelRoute } from './cancels.js';
import { createGroupHandshake } from './group-handshake.js';

/** The priority an API from before TASK_QUEUE gave tasks on the synchronous queue (legacy jobs are told by it). */
export const LEGACY_TASK_PRIORITY = 10;

/** Finished task jobs not taken by any API (all of them down for that long) still go eventually. */
const KEEP_FINISHED_S = 7 * 24 * 3_600;
const TASK_JOB_OPTIONS = {
  ...JOB_OPTIONS,
  removeOnComplete: { age: KEEP_FINISHED_S },
  removeOnFail: { age: KEEP_FINISHED_S },
} as const;

/**
 * A group job's tasks keep their results in the group's hash, so the job itself is not needed once
 * it completes; one that failed for good stays, to tell its unfinished tasks so (then the hash goes
 * with its last task).
 */
const GROUP_JOB_OPTIONS = { ...JOB_OPTIONS, removeOnComplete: true, removeOnFail: { age: KEEP_FINISHED_S } } as const;

const COMMAND_TIMEOUT_MS = 3_000;

/** A queue and how to cancel its running jobs. */
export interface TaskQueue {
  readonly queue: Queue<JobData, JobResult>;
  readonly cancels: CancelRoute;
}

/** The ends of jobs this process hears (its own stream, or the events stream while older workers are connected). */
export interface EndsHeard {
  completed(jobId: string): void;
  failed(jobId: string): void;
  /** A group's tasks that ended (TASK_ENDED_EVENT's ids, joined by ','). */
  tasksEnded(ids: string): void;
}

/** The queue's adapter of TaskExecution, and what the runner feeds it. */
export interface BullmqTaskExecution extends TaskExecution {
  readonly heard: EndsHeard;
}

export interface BullmqTaskDeps extends TaskQueue {
  /** The synchronous queue, where an API from before TASK_QUEUE queued its tasks. */
  readonly legacy: TaskQueue;
  readonly log: Logger;
  /** Whether Redis can take a command now (else 503 at once). */
  readonly connected: () => Promise<boolean>;
  /** The queue's connection (the groups' hashes live beside the queue) and its prefix. */
  readonly redis: RedisClient;
  readonly prefix: string;
  /** TAREFAS_POR_JOB: the most a group carries, when the live workers read groups. */
  readonly groupSize: number;
  /** This API's address: its jobs' ends are told to its own stream (addressed.ts). */
  readonly fim: string;
  /**
   * How long after its submission a task's record may still exist at most: LOTE_MAX_HOURS (a batch
   * closes by then) plus RESULT_TTL_HOURS (its results expire after that, SPEC §7.1). Past it there
   * is no record left to take the task's end.
   */
  readonly recordLifeMs: number;
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

export function createBullmqTaskExecution({
  queue,
  cancels,
  legacy,
  log,
  connected,
  redis: client,
  prefix,
  groupSize,
  fim,
  recordLifeMs,
}: BullmqTaskDeps): BullmqTaskExecution {
  const redis = bounded(connected);
  const scripts = groupScripts(client);
  const keys = groupKeys(prefix, TASK_QUEUE);
  const logError = throttledErrorLog(log);
  const { groupSizeNow, rescue } = createGroupHandshake({ queue, client, prefix, groupSize, log, redis });

  const listeners: ((id: string) => void)[] = [];
  /**
   * The tasks (and groups) this process queued whose end it has not been told yet: only their ends
   * are recorded from what it hears here (its own stream names only them; the queue's events
   * stream, read while older workers are connected, names every job). When each replica
   * recorded every end, the APIs' CPU per file grew with their number (CLUSTER.md, the API
   * series: 3.9 ms a file with one, 7.1 with two, 10.1 with three). The end of a task whose API is
   * gone is recorded by any replica's reconciler (tarefas/maintenance.ts) or by the first look at
   * it. A task leaves it when its end is recorded here (forget), a group when it completes.
   * Each is kept until its record's expiry at the latest (recordLifeMs after its submission): one
   * whose end another replica recorded goes then, with its record, and never a live one because
   * too many others wait (a state's batch of 190,000 returns is as many tasks). Insertion-ordered,
   * so the expired ones are at the head.
   */
  const mine = new Map<string, number>();
  const remember = (id: string, now: number) => {
    mine.delete(id); // a task queued again (a retried submission) goes to the tail
    mine.set(id, now + recordLifeMs);
  };
  const purge = (now: number) => {
    for (const [id, until] of mine) {
      if (until > now) break;
      mine.delete(id);
    }
  };
  // A task may be told twice (its group's task-ended event, then the group's failure); the first
  // look may find it not ended yet, so it stays remembered until its end is recorded (forget).
  const notify = (id: string) => {
    if (!mine.has(id)) return;
    for (const listener of listeners) listener(id);
  };
  // A group's tasks were each told as they ended (TASK_ENDED_EVENT); one that failed for good
  // (its attempts spent) ends its unfinished tasks, so each of them is told then.
  const onCompleted = ({ jobId }: { jobId: string }) => {
    // A group's own end tells nothing more: its tasks were told one by one.
    if (jobId.startsWith(GROUP_ID_PREFIX)) mine.delete(jobId);
    else notify(jobId);
  };
  const onFailed = ({ jobId }: { jobId: string }) => {
    if (!jobId.startsWith(GROUP_ID_PREFIX)) return notify(jobId);
    if (!mine.has(jobId)) return;
    client.hkeys(keys.group(jobId)).then(
      (ids) => ids.forEach(notify),
      () => undefined, // the reconciler finds them later
    );
  };
  const own: TaskQueue = { queue, cancels };
  const heard: EndsHeard = {
    completed: (jobId) => onCompleted({ jobId }),
    failed: (jobId) => onFailed({ jobId }),
    tasksEnded: (ids) => ids.split(',').forEach((id) => notify(id)),
  };

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

  /** Grouped tasks' states (one group's): their fields first (a finished one needs nothing else), then the group job's state. */
  async function inspectGroup(grupo: string, ids: readonly string[]): Promise<JobObservation[]> {
    const read = async (): Promise<(GroupItemState | null)[]> =>
      (await client.hmget(keys.group(grupo), ...ids)).map((raw) => (raw === null ? null : parseItem(raw)));
    let items = await read();
    const unfinished = items.some((item) => item?.state === 'waiting' || item?.state === 'started');
    const state = unfinished ? await queue.getJobState(grupo) : null;
    // The group may have ended between the two reads: the worker records every end before its
    // job completes, so the fields read again after an ended (or removed) job are its last word.
    if (state === 'completed' || state === 'failed' || state === 'unknown') items = await read();
    return items.map((item): JobObservation => {
      if (item === null) return { state: 'missing' };
      if (item.state === 'done') return { state: 'done', startedAt: item.startedAt, finishedAt: item.finishedAt, result: item.result };
      if (item.state === 'stopped') {
        return {
          state: 'failed',
          startedAt: item.startedAt,
          finishedAt: item.finishedAt,
          why: item.why === 'erro' ? 'error' : 'cancelled',
        };
      }
      if (state === 'active') return item.state === 'started' ? { state: 'active', startedAt: item.startedAt } : { state: 'waiting' };
      // Claimed by an idle worker while its group's job still waits for one (task-groups.ts).
      if (item.state === 'started' && item.claim !== undefined && state !== 'unknown' && state !== 'failed' && state !== 'completed') {
        return { state: 'active', startedAt: item.startedAt };
      }
      if (state === 'unknown') return { state: 'missing' };
      if (state === 'failed' || state === 'completed') {
        // Its group ended without it: attempts spent on a failure (a completed group ends every task it has).
        return { state: 'failed', startedAt: item.state === 'started' ? item.startedAt : null, finishedAt: Date.now(), why: 'error' };
      }
      return { state: 'waiting' }; // waiting, delayed for a retry, or given back
    });
  }

  /** A task of its own: the state first, then the job. */
  async function inspectOne(id: string): Promise<JobObservation> {
    // A job read first could have finished in between, and would then show a finished state with
    // its result not yet in the copy read.
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
  }

  /** The tasks by group (one look or one drop per group); tasks of their own under null. */
  function byGroup(tasks: readonly TaskRef[]): Map<string | null, number[]> {
    const out = new Map<string | null, number[]>();
    tasks.forEach(({ grupo }, i) => {
      const key = grupo || null;
      const at = out.get(key);
      if (at) at.push(i);
      else out.set(key, [i]);
    });
    return out;
  }

  /**
   * Takes a grouped task out of its group (cancelled, deleted, or its end recorded). One that
   * still runs (its end recorded as a timeout, or cancelled) is stopped by the worker that claimed
   * it from its group (task-groups.ts), else by the worker that holds its group. The group's job
   * goes with its last task; a running group is locked by its worker (remove answers 0), completes
   * by itself and goes then.
   *
   * When every task dropped had been finished by the worker, the group's job is not removed here:
   * a worker writes a task's end before the group's job completes, and a completed group job goes
   * by itself (GROUP_JOB_OPTIONS); BullMQ's removeJob script was some twenty commands a group for
   * a job already gone or about to go (issue 55). A group job that failed for good keeps its tasks'
   * unfinished fields (attempts spent), so its last drop finds one unfinished and removes it.
   */
  async function dropGrouped(grupo: string, given: readonly string[]): Promise<void> {
    const ids = [...new Set(given)];
    const reply = await scripts.censoDropItems(keys.group(grupo), keys.waiting, keys.share(grupo), keys.open, grupo, ...ids);
    const dropped = droppedOf(reply, ids.length);
    for (const [i, was] of dropped.was.entries()) {
      if (was === 'started') await sendCancel(cancels, grupo, ids[i]!);
      // A task claimed by a worker sharing the group: its claimer runs it, not the group job's worker.
      const claimer = dropped.claimers.get(i);
      if (was === 'claimed' && claimer !== undefined) await sendCancelTo(cancels, claimer, ids[i]!);
    }
    if (!dropped.empty) return;
    mine.delete(grupo);
    if (dropped.was.some((was) => was !== 'finished')) await queue.remove(grupo);
  }

  /** Queues one group job for `tasks` (the same `grupo`): their fields first, so the worker finds them all. */
  async function submitGroup(grupo: string, tasks: readonly QueuedTask[]): Promise<void> {
    const fields: string[] = [];
    for (const { id } of tasks) fields.push(id, WAITING_ITEM);
    const replies = await client
      .multi()
      .hset(keys.group(grupo), ...fields)
      .pexpire(keys.group(grupo), KEEP_FINISHED_S * 1_000)
      .incrby(keys.waiting, tasks.length)
      .exec();
    // A command refused inside the transaction (Redis out of memory, say) is a reply, not a rejection.
    const refused = replies?.find(([err]) => err !== null)?.[0];
    if (!replies || refused) throw refused ?? new Error('the group was not recorded');
    const data: GroupJobData = { kind: GROUP_JOB, tarefas: tasks.map(({ id, data }) => ({ id, data })) };
    // The same queue, typed for the core's jobs its synchronous side reads back.
    const groupQueue = queue as unknown as Queue<QueuedJobData, GroupSummary>;
    await groupQueue.add(GROUP_JOB, { ...withContract(data), fim }, { ...GROUP_JOB_OPTIONS, jobId: grupo });
  }

  return {
    mode: 'bullmq',
    groupSize: groupSizeNow,
    idSource: () => freshIds,
    heard,

    async rescue() {
      await rescue().catch((err: unknown) => logError('rescue of handed-back jobs', err));
    },

    async submit(jobs) {
      const single: QueuedTask[] = [];
      const groups = new Map<string, QueuedTask[]>();
      for (const [grupo, at] of byGroup(jobs)) {
        const tasks = at.map((i) => jobs[i]!);
        if (grupo) groups.set(grupo, tasks);
        else single.push(...tasks);
      }
      // Remembered before they are queued: a quick job's end may be heard before addBulk returns.
      const now = Date.now();
      purge(now);
      for (const { id } of jobs) remember(id, now);
      for (const grupo of groups.keys()) remember(grupo, now);
      try {
        await redis(async () => {
          // addBulk: one MULTI for the request's jobs of their own, all of them or none.
          if (single.length > 0) {
            await queue.addBulk(
              single.map(({ id, data }) => ({
                name: data.kind,
                data: { ...withContract(data), fim },
                opts: { ...TASK_JOB_OPTIONS, jobId: id },
              })),
            );
          }
          for (const [grupo, tasks] of groups) await submitGroup(grupo, tasks);
        });
      } catch (err) {
        log.warn({ err, tarefas: jobs.map((job) => job.id) }, 'could not enqueue task');
        for (const { id } of jobs) mine.delete(id);
        for (const grupo of groups.keys()) mine.delete(grupo);
        // They may still land after the timeout: none must run for a task that does not exist.
        for (const { id } of single) void queue.remove(id).catch(() => undefined);
        for (const [grupo, tasks] of groups) {
          void queue.remove(grupo).catch(() => undefined);
          void dropGrouped(
            grupo,
            tasks.map(({ id }) => id),
          ).catch(() => undefined);
        }
        throw new QueueUnavailableError({ cause: err });
      }
    },

    async inspect({ id, grupo }): Promise<JobObservation> {
      return redis(async () => (grupo ? (await inspectGroup(grupo, [id]))[0]! : inspectOne(id)));
    },

    async inspectAll(tasks): Promise<JobObservation[]> {
      if (tasks.length === 0) return [];
      return redis(async () => {
        const out: JobObservation[] = new Array(tasks.length);
        await Promise.all(
          [...byGroup(tasks)].map(async ([grupo, at]) => {
            const seen = grupo
              ? await inspectGroup(
                  grupo,
                  at.map((i) => tasks[i]!.id),
                )
              : await Promise.all(at.map((i) => inspectOne(tasks[i]!.id)));
            at.forEach((i, k) => (out[i] = seen[k]!));
          }),
        );
        return out;
      });
    },

    async cancel({ id, grupo }) {
      await redis(async () => {
        if (grupo) return dropGrouped(grupo, [id]);
        // A waiting job is removed; a running one is locked by its worker, which stops it on this event.
        const at = (await locate(id))?.at ?? own;
        if ((await at.queue.remove(id)) === 1) return;
        await sendCancel(at.cancels, id, id);
      });
    },

    async forget(tasks) {
      // Recorded (here or by another replica): no event of theirs is waited for any more.
      for (const { id } of tasks) mine.delete(id);
      await redis(() =>
        Promise.all(
          [...byGroup(tasks)].map(async ([grupo, at]) => {
            const ids = at.map((i) => tasks[i]!.id);
            if (grupo) return dropGrouped(grupo, ids);
            // Each end was read from its job just before (inspect), which told where the job is.
            await Promise.all(
              ids.map(async (id) => {
                await (onLegacy.has(id) ? legacy.queue : queue).remove(id);
                onLegacy.delete(id);
              }),
            );
          }),
        ),
      );
    },

    async waiting() {
      return redis(async () => {
        const [mine, old, grouped] = await Promise.all([
          queue.getWaitingCount(),
          legacy.queue.getPrioritizedCount(),
          client.get(keys.waiting),
        ]);
        // Grouped tasks are counted from their fields; a waiting group's job is then counted once
        // more, as a task: one too many per group, never too few.
        return mine + old + Math.max(0, Number(grouped ?? 0));
      });
    },

    async running() {
      const [mine, old] = await redis(() => Promise.all([queue.getActive(), legacy.queue.getActive()]));
      const out = new Map<string, number>();
      const groups: string[] = [];
      for (const job of mine) {
        if (!job.id) continue;
        if (job.name === GROUP_JOB) groups.push(job.id);
        else out.set(job.id, job.processedOn ?? Date.now());
      }
      for (const job of old) if (job.id && job.opts.priority === LEGACY_TASK_PRIORITY) out.set(job.id, job.processedOn ?? Date.now());
      // A running group's running task: the one whose field says started.
      for (const grupo of groups) {
        const fields = await redis(() => client.hgetall(keys.group(grupo)));
        for (const [id, raw] of Object.entries(fields)) {
          const item = parseItem(raw);
          if (item.state === 'started') out.set(id, item.startedAt);
        }
      }
      return out;
    },

    onSettled(listener) {
      listeners.push(listener);
    },

    async close() {
      listeners.length = 0;
    },
  };
}
