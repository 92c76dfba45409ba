// The BullMQ processor: a thin shell around the job pool. All parsing happens in the pool's
// worker threads, so this process's event loop stays free to renew job locks (a CPU-bound
// processor on the main thread would let locks expire and get its jobs "stalled" mid-run).
import { setTimeout as sleep } from 'node:timers/promises';
import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import {
  ABORT_CANCELLED,
  ABORT_SHUTDOWN,
  EVENTS_MAX_LEN,
  GROUP_JOB,
  InputsGoneError,
  InvalidJobDataError,
  JOB_CONTRACT_VERSION,
  StorageUnavailableError,
  UPLOAD_GONE,
  TELL_ENDS_MS,
  contractOf,
  endsStream,
  endsTo,
  ENDS_TTL_MS,
  finishedItem,
  groupKeys,
  groupScripts,
  HANDED_BACK_TTL_MS,
  readerKeys,
  inSpan,
  jobOf,
  startedItem,
  storageExecutor,
  type GroupItem,
  type GroupJobData,
  type GroupSummary,
  type JobData,
  type JobExecutor,
  type JobResult,
  type QueuedJobData,
  type RedisClient,
  type Storage,
} from '@censo/shared';
import type { Logger } from 'pino';

export interface ProcessorOptions {
  /** Where the API put the job's files: jobs may only touch files of one of its request areas. */
  readonly storage: Storage;
  readonly log: Logger;
  /** The newest contract version this worker knows (tests play a rolling upgrade with it). */
  readonly contractVersion?: number;
  /** How long a slot that gave back a job of a newer contract stays away from the queue (default 1 s). */
  readonly handBackPauseMs?: number;
  /** Where group jobs keep their tasks' states (task-groups.ts): the queue's connection, prefix and name. */
  readonly groups?: {
    readonly redis: RedisClient;
    readonly prefix: string;
    readonly queue: string;
    /** False plays a worker from before ADDRESSED_CONTRACT_VERSION: ends go on the events stream (tests). */
    readonly addressed?: boolean;
  };
}

/** Most tasks a group job may carry (job data comes from Redis: a bound on what one job does). */
const MAX_GROUP_TASKS = 1_000;

/**
 * A worker that gives a job back would otherwise take it again at once: it asks the queue for
 * its next job before a newer worker, woken by the same job's return, can (measured: an N worker
 * took an N+1 job back every time, for as long as it ran). So the slot that gave it back stays
 * busy this long, and the newer worker takes the job meanwhile.
 */
export const HAND_BACK_PAUSE_MS = 1_000;

export type ProcessorJob = Job<QueuedJobData, JobResult | GroupSummary>;

export type JobProcessor = (job: ProcessorJob, token?: string, signal?: AbortSignal) => Promise<JobResult | GroupSummary>;

export interface Processor extends JobProcessor {
  /** Stops the task of a group job running here (the API's CANCEL_EVENT names tasks, not groups): whether one was. */
  cancelTask(id: string): boolean;
}

export function createProcessor(
  pool: JobExecutor,
  { storage, log, contractVersion = JOB_CONTRACT_VERSION, handBackPauseMs = HAND_BACK_PAUSE_MS, groups }: ProcessorOptions,
): Processor {
  const executor = storageExecutor(storage, pool);
  /** Newer versions already reported: a job waiting for a newer worker comes back every second. */
  const reported = new Set<number>();
  /** The tasks of group jobs running here now, by task id. */
  const runningTasks = new Map<string, AbortController>();

  /** A job whose signal aborted: back to the queue on shutdown (no attempt spent), else over for good (cancelled). */
  async function stopped(job: ProcessorJob, token: string | undefined, signal: AbortSignal): Promise<never> {
    if (signal.reason === ABORT_SHUTDOWN && token) {
      await job.moveToWait(token);
      throw new WaitingError();
    }
    // Cancelled by the API: nobody waits for this job any more.
    throw new UnrecoverableError(String(signal.reason ?? 'aborted'));
  }

  /**
   * Runs one core job: its result, or a thrown error. `UnrecoverableError` when it must not run
   * again (bad data, inputs gone, cancelled); `WaitingError` once handed back on shutdown.
   */
  async function runOne(job: ProcessorJob, data: JobData, jobLog: Logger, token: string | undefined, signal: AbortSignal | undefined) {
    // Job data comes from Redis: whoever can write there must not make the worker read or
    // write files outside the storage's request areas.
    try {
      storage.checkJobData(data);
    } catch (err) {
      if (err instanceof InvalidJobDataError) throw new UnrecoverableError(err.message);
      throw err;
    }

    // The API deletes the request's files as soon as its request ends (timeout, client gone), and
    // a job can still be waiting then: failing it without retries is the expected, quiet outcome.
    if (!(await inputsExist(storage, data))) throw new UnrecoverableError(UPLOAD_GONE);

    const started = performance.now();
    try {
      const result = await untilAborted(executor.run(data, signal), signal);
      // One line per job, like the API's per-request line: ids and counts, never file contents.
      jobLog.info(
        { ok: result.ok, ...(result.ok ? { count: result.count } : { code: result.code }), ms: Math.round(performance.now() - started) },
        'job done',
      );
      return result;
    } catch (err) {
      if (signal?.aborted) return stopped(job, token, signal);
      if (err instanceof InputsGoneError || !(await inputsExist(storage, data))) throw new UnrecoverableError(UPLOAD_GONE);
      // The request waits synchronously: a storage outage is its 503 now, not a retry later.
      if (err instanceof StorageUnavailableError) {
        jobLog.warn({ err: err.cause }, 'storage unavailable');
        return { ok: false, status: 503, code: err.code, erro: err.message } as const;
      }
      throw err; // a bug or infrastructure: BullMQ retries it up to JOB_ATTEMPTS
    }
  }

  /**
   * A group job: its tasks one after the other, each one's end in the group's hash as it comes
   * (task-groups.ts). A task finished in an earlier attempt, or cancelled, is skipped; a bug or an
   * infrastructure failure fails the attempt, and the next one goes on from the first unfinished task.
   */
  async function runGroup(
    job: ProcessorJob,
    group: GroupJobData,
    version: number,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ) {
    if (!groups) throw new UnrecoverableError('a group job on a queue without groups');
    const tarefas = group.tarefas as unknown;
    if (!Array.isArray(tarefas) || tarefas.length === 0 || tarefas.length > MAX_GROUP_TASKS) {
      throw new UnrecoverableError('invalid job data: a group holds 1 to 1000 tasks');
    }
    for (const item of tarefas as unknown[]) {
      const { id, data } = (item ?? {}) as Partial<GroupItem>;
      if (typeof id !== 'string' || id.length === 0 || id.length > 64 || typeof data !== 'object' || data === null) {
        throw new UnrecoverableError('invalid job data: a group task needs an id and a job');
      }
    }
    const redis = groupScripts(groups.redis);
    const keys = groupKeys(groups.prefix, groups.queue);
    const groupKey = keys.group(String(job.id));
    // Ends go to the API that queued the group; to every API (the events stream) for an older one's.
    const api = groups.addressed === false ? null : endsTo(job.data);
    const tellTo = api === null ? keys.events : endsStream(groups.prefix, api);
    const tellTtlMs = api === null ? 0 : ENDS_TTL_MS;
    /** Ends not yet recorded (id, field pairs): the next step records them. */
    let ended: string[] = [];
    /** Ends recorded and not yet told to the APIs, and since when. */
    let untold: string[] = [];
    let untoldSince = 0;
    /** Records what ended, tells it if it is time (or `tellAll`), and takes `next` ('' none): whether to run it. */
    const step = async (next: string, startedAt: number, tellAll: boolean): Promise<boolean> => {
      const recorded = ended;
      for (let i = 0; i < recorded.length; i += 2) untold.push(recorded[i]!);
      if (untold.length > 0 && untoldSince === 0) untoldSince = Date.now();
      const tell = untold.length > 0 && (tellAll || Date.now() - untoldSince >= TELL_ENDS_MS) ? untold.join(',') : '';
      const run = await redis.censoStep(
        groupKey,
        keys.waiting,
        tellTo,
        next,
        startedItem(startedAt),
        EVENTS_MAX_LEN,
        tell,
        tellTtlMs,
        ...recorded,
      );
      ended = [];
      if (tell !== '') {
        untold = [];
        untoldSince = 0;
      }
      return run === 1;
    };
    let ran = 0;
    try {
      for (const { id, data } of group.tarefas) {
        if (signal?.aborted) {
          // Between two tasks: the finished ones stay finished, the rest goes back as a shutdown does.
          await step('', 0, true);
          return stopped(job, token, signal);
        }
        const startedAt = Date.now();
        if (!(await step(id, startedAt, false))) continue;
        const controller = new AbortController();
        const onAbort = () => controller.abort(signal?.reason);
        signal?.addEventListener('abort', onAbort, { once: true });
        runningTasks.set(id, controller);
        const jobLog = log.child({ jobId: job.id, tarefa: id, kind: data.kind, attempt: job.attemptsStarted, contract: version });
        try {
          // Each task of a group job a span of its own inside the job's (its id, never its file).
          const result = await inSpan('tarefa', { 'censo.tarefa.id': id, 'censo.job.kind': data.kind }, () =>
            runOne(job, data, jobLog, token, controller.signal),
          );
          ended.push(id, finishedItem(startedAt, Date.now(), { result }));
        } catch (err) {
          if (err instanceof WaitingError || signal?.aborted) throw err; // the whole group went back, or stops
          // A bug or an infrastructure failure: the group is tried again from this task, as a job
          // of its own would be; on the group's last attempt it fails this task alone, and the
          // others still run.
          if (!(err instanceof UnrecoverableError) && job.attemptsMade + 1 < (job.opts.attempts ?? 1)) throw err;
          const cancelled = err instanceof UnrecoverableError && (err.message === UPLOAD_GONE || controller.signal.aborted);
          if (!cancelled) jobLog.error({ err }, 'group task failed');
          ended.push(id, finishedItem(startedAt, Date.now(), { why: cancelled ? 'cancelado' : 'erro' }));
        } finally {
          runningTasks.delete(id);
          signal?.removeEventListener('abort', onAbort);
        }
        ran++;
      }
      await step('', 0, true);
    } catch (err) {
      // What ended before the failure is kept (a retry skips it) and told; Redis may be the failure.
      if (ended.length > 0 || untold.length > 0) await step('', 0, true).catch(() => undefined);
      throw err;
    }
    return { tarefas: ran };
  }

  // Three declared parameters: BullMQ only passes an abort signal to processors whose arity is 3.
  const process = async function process(job: ProcessorJob, token?: string, signal?: AbortSignal): Promise<JobResult | GroupSummary> {
    const version = contractOf(job.data);
    if (version === null) throw new UnrecoverableError('invalid job data: its contract version is not a whole number from 1');
    if (version > contractVersion) {
      // Sent by a newer API during a rolling upgrade (SPEC §9): back to the queue for a worker
      // that knows its contract, never failed, and without spending one of its attempts.
      if (!reported.has(version)) {
        reported.add(version);
        log.warn({ jobId: job.id, contract: version, known: contractVersion }, 'job of a newer contract left for a newer worker');
      }
      if (!token) throw new Error('a job of a newer contract can only be given back with its lock token');
      await job.moveToWait(token);
      // On the tasks' queue, the APIs look at the jobs given back (readers.ts): one that no live
      // worker reads (a rollback left it) is relabelled by an API whose jobs the live workers read.
      if (groups && job.id) await tellHandedBack(groups, job.id).catch(() => undefined);
      await sleep(handBackPauseMs, undefined, { signal }).catch(() => undefined); // a closing worker need not wait
      throw new WaitingError();
    }
    const data = jobOf(job.data);
    if (data.kind === GROUP_JOB) return runGroup(job, data, version, token, signal);
    const jobLog = log.child({ jobId: job.id, kind: data.kind, attempt: job.attemptsStarted, contract: version });
    return runOne(job, data, jobLog, token, signal);
  };
  return Object.assign(process, {
    cancelTask(id: string): boolean {
      const controller = runningTasks.get(id);
      controller?.abort(ABORT_CANCELLED);
      return controller !== undefined;
    },
  });
}

async function tellHandedBack(groups: NonNullable<ProcessorOptions['groups']>, id: string): Promise<void> {
  const key = readerKeys(groups.prefix, groups.queue).handedBack;
  await groups.redis.multi().zadd(key, Date.now(), id).pexpire(key, HANDED_BACK_TTL_MS).exec();
}

/** Unknown (the storage does not answer) counts as present: the job itself then reports the outage. */
async function inputsExist(storage: Storage, data: JobData): Promise<boolean> {
  return storage.inputsExist(data).catch(() => true);
}

/**
 * Rejects as soon as the signal aborts, even if the pool is slow to notice: shutdown and
 * cancellation must not wait for a long parse to reach its next checkpoint.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
