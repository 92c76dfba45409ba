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
  claimedItem,
  claimMark,
  parseItem,
  CLAIMED_POLL_MS,
  CLAIM_CHUNK,
  cancelChannel,
  workerOfToken,
  SHARE_TTL_MS,
  STEP_CLAIMED,
  STEP_RUN,
  WAITING_ITEM,
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
    /** False plays a worker from before groups were shared: it opens none of its groups to claims (tests). */
    readonly shares?: boolean;
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

/** Tasks a worker claimed from a group it shares (claims.ts), and what it needs to run them. */
export interface Claim {
  readonly group: string;
  /** The group job's data, as queued. */
  readonly queued: QueuedJobData;
  readonly tasks: readonly string[];
  /** The claimer's BullMQ id, as in the claimed fields. */
  readonly worker: string;
  readonly startedAt: number;
  readonly leaseMs: number;
  readonly renewMs: number;
}

export interface Processor extends JobProcessor {
  /** Stops the task of a group job running here (the API's CANCEL_EVENT names tasks, not groups): whether one was. */
  cancelTask(id: string): boolean;
  /** Runs tasks claimed from a group this worker shares; `signal` aborts when the worker closes. */
  runClaimed(claim: Claim, signal: AbortSignal): Promise<void>;
  /** Tells every claimed task's end not told yet (the look for claims has ended). */
  tellClaimed(): Promise<void>;
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
  /** The steps of the groups this worker claimed from since its look for claims began (runClaimed). */
  const claimedSteps = new Map<string, ReturnType<typeof groupSteps>>();

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
   * again (bad data, inputs gone, cancelled); what `stopped` throws once its signal aborted.
   */
  async function runOne(data: JobData, jobLog: Logger, signal: AbortSignal | undefined, stopped: (signal: AbortSignal) => Promise<never>) {
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
      if (signal?.aborted) return stopped(signal);
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
   * Where a group's tasks' states and ends go (task-groups.ts): its hash, and the stream of the API
   * that queued it (the events stream for an older API's group). `step` records what ended since
   * its last call, tells it when it is time (or `tellAll`), and takes `next` ('' none).
   */
  function groupSteps(groupId: string, queued: QueuedJobData) {
    if (!groups) throw new UnrecoverableError('a group job on a queue without groups');
    const redis = groupScripts(groups.redis);
    const keys = groupKeys(groups.prefix, groups.queue);
    const groupKey = keys.group(groupId);
    // Ends go to the API that queued the group; to every API (the events stream) for an older one's.
    const api = groups.addressed === false ? null : endsTo(queued);
    const tellTo = api === null ? keys.events : endsStream(groups.prefix, api);
    const tellTtlMs = api === null ? 0 : ENDS_TTL_MS;
    /** Ends not yet recorded (id, field pairs): the next step records them. */
    let ended: string[] = [];
    /** Ends recorded and not yet told to the APIs, and since when. */
    let untold: string[] = [];
    let untoldSince = 0;
    const step = async (next: string, startedField: string, tellAll: boolean): Promise<number> => {
      const recorded = ended;
      for (let i = 0; i < recorded.length; i += 2) untold.push(recorded[i]!);
      if (untold.length > 0 && untoldSince === 0) untoldSince = Date.now();
      const tell = untold.length > 0 && (tellAll || Date.now() - untoldSince >= TELL_ENDS_MS) ? untold.join(',') : '';
      const run = await redis.censoStep(
        groupKey,
        keys.waiting,
        tellTo,
        next,
        startedField,
        EVENTS_MAX_LEN,
        tell,
        tellTtlMs,
        Date.now(),
        ...recorded,
      );
      ended = [];
      if (tell !== '') {
        untold = [];
        untoldSince = 0;
      }
      return run;
    };
    return {
      redis,
      keys,
      groupKey,
      step,
      end(id: string, field: string) {
        ended.push(id, field);
      },
      /** Whether anything ended is still unrecorded or untold. */
      pending: () => ended.length > 0 || untold.length > 0,
    };
  }

  /**
   * One task of a group, on this worker: its end, as the field to record (`stopped` for an abort
   * of the whole group, which the caller handles). `finalAttempt`: a bug or an infrastructure
   * failure fails this task alone rather than the group's attempt.
   */
  async function runTask(
    id: string,
    data: JobData,
    jobLog: Logger,
    startedAt: number,
    signal: AbortSignal | undefined,
    stopped: (signal: AbortSignal) => Promise<never>,
    finalAttempt: boolean,
  ): Promise<string> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    runningTasks.set(id, controller);
    try {
      // Each task of a group job a span of its own inside the job's (its id, never its file).
      const result = await inSpan('tarefa', { 'censo.tarefa.id': id, 'censo.job.kind': data.kind }, () =>
        runOne(data, jobLog, controller.signal, stopped),
      );
      return finishedItem(startedAt, Date.now(), { result });
    } catch (err) {
      if (err instanceof WaitingError || signal?.aborted) throw err; // the whole group went back, or stops
      // A bug or an infrastructure failure: the group is tried again from this task, as a job
      // of its own would be; on the group's last attempt it fails this task alone, and the
      // others still run.
      if (!(err instanceof UnrecoverableError) && !finalAttempt) throw err;
      const cancelled = err instanceof UnrecoverableError && (err.message === UPLOAD_GONE || controller.signal.aborted);
      if (!cancelled) jobLog.error({ err }, 'group task failed');
      return finishedItem(startedAt, Date.now(), { why: cancelled ? 'cancelado' : 'erro' });
    } finally {
      runningTasks.delete(id);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** A group's tasks checked as an array of `{ id, data }` (job data comes from Redis). */
  function checkedTasks(group: GroupJobData): readonly GroupItem[] {
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
    return tarefas as GroupItem[];
  }

  /**
   * A group job: its tasks one after the other from the front, each one's end in the group's hash
   * as it comes (task-groups.ts). A task finished in an earlier attempt, or cancelled, is skipped;
   * one claimed by an idle worker is left to it, and the job ends once those have ended too (a
   * claim whose lease ran out is run here). A bug or an infrastructure failure fails the attempt,
   * and the next one goes on from the first unfinished task.
   */
  async function runGroup(
    job: ProcessorJob,
    group: GroupJobData,
    version: number,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ) {
    const tarefas = checkedTasks(group);
    const steps = groupSteps(String(job.id), job.data);
    const stoppedJob = (aborted: AbortSignal) => stopped(job, token, aborted);
    const finalAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    /** Tasks another worker's claim holds: this job ends when they have. */
    const claimed = new Map<string, JobData>();
    let ran = 0;
    const run = async (id: string, data: JobData) => {
      const startedAt = Date.now();
      const next = await steps.step(id, startedItem(startedAt), false);
      if (next === STEP_CLAIMED) claimed.set(id, data);
      if (next !== STEP_RUN) return;
      claimed.delete(id);
      const jobLog = log.child({ jobId: job.id, tarefa: id, kind: data.kind, attempt: job.attemptsStarted, contract: version });
      steps.end(id, await runTask(id, data, jobLog, startedAt, signal, stoppedJob, finalAttempt));
      ran++;
    };
    try {
      // Open to idle workers' claims (task-groups.ts): its tasks' order, claimed from the back, and
      // as many idle workers woken, each on its own channel, as could take a claim of it.
      if (tarefas.length > 1 && groups!.shares !== false) {
        const id = String(job.id);
        const ids = tarefas.map((item) => item.id).join(',');
        const owner = (token && workerOfToken(token)) ?? '';
        const wake = Math.ceil(tarefas.length / CLAIM_CHUNK) - 1;
        const channels = cancelChannel(groups!.prefix, groups!.queue, '');
        await steps.redis.censoOpen(
          steps.keys.share(id),
          steps.keys.open,
          steps.keys.idle,
          ids,
          SHARE_TTL_MS,
          id,
          Date.now(),
          channels,
          owner,
          wake,
        );
      }
      for (const { id, data } of tarefas) {
        if (signal?.aborted) {
          // Between two tasks: the finished ones stay finished, the rest goes back as a shutdown does.
          await steps.step('', '', true);
          return stopped(job, token, signal);
        }
        // Claims go from the back, so past the first claimed task every one is claimed (or gone, or
        // given back): the looks below see to them, without a step each.
        if (claimed.size > 0) claimed.set(id, data);
        else await run(id, data);
      }
      // What others claimed: looked at every CLAIMED_POLL_MS until each has ended, or its claim
      // ran out (its claimer died), and then it runs here.
      while (claimed.size > 0) {
        if (steps.pending()) await steps.step('', '', true);
        await sleep(CLAIMED_POLL_MS, undefined, { signal }).catch(() => undefined);
        if (signal?.aborted) return stopped(job, token, signal);
        const ids = [...claimed.keys()];
        const values = await groups!.redis.hmget(steps.groupKey, ...ids);
        const now = Date.now();
        for (const [i, id] of ids.entries()) {
          const raw = values[i];
          const item = raw === null || raw === undefined ? null : parseItem(raw);
          if (item === null || item.state === 'done' || item.state === 'stopped') claimed.delete(id);
          else if (item.state !== 'started' || item.claim === undefined || item.claim.until <= now) await run(id, claimed.get(id)!);
        }
      }
      await steps.step('', '', true);
    } catch (err) {
      // What ended before the failure is kept (a retry skips it) and told; Redis may be the failure.
      if (steps.pending()) await steps.step('', '', true).catch(() => undefined);
      throw err;
    }
    return { tarefas: ran };
  }

  /**
   * Tasks this worker claimed from a group it shares (task-groups.ts), run one after the other as
   * the group's own worker would; their ends recorded together when the claim's last one ends, and
   * told to the API within TELL_ENDS_MS (tellClaimed tells the rest when the look ends). The claims
   * are renewed while they run; one found gone (cancelled, or taken over after its lease ran out)
   * stops its task, and its end is not written. On `signal` (the worker closing), or a failure that
   * is not the file's, what has not ended goes back as waiting, for the group's own worker.
   */
  async function runClaimed(claim: Claim, signal: AbortSignal): Promise<void> {
    // The same group's steps across its claims: ends told at most every TELL_ENDS_MS, as its owner tells them.
    let steps = claimedSteps.get(claim.group);
    if (!steps) {
      steps = groupSteps(claim.group, claim.queued);
      claimedSteps.set(claim.group, steps);
    }
    const mark = claimMark(claim.worker);
    /** The claims still ours and not ended, with when each was claimed. */
    const left = new Map(claim.tasks.map((id) => [id, claim.startedAt]));
    /** Claims found no longer ours (cancelled, or taken over once the lease ran out): their ends are not ours to write. */
    const lost = new Set<string>();
    /** Writes each left task's claim again: renewed, or given back as waiting. */
    const rewrite = async (release: boolean) => {
      if (left.size === 0) return;
      const ids = [...left.keys()];
      const pairs: string[] = [];
      for (const id of ids) pairs.push(id, release ? WAITING_ITEM : claimedItem(left.get(id)!, claim.worker, Date.now() + claim.leaseMs));
      const held = await steps.redis.censoRenew(steps.groupKey, steps.keys.waiting, mark, release ? '1' : '0', ...pairs);
      ids.forEach((id, i) => {
        if (held[i] === 1 && !release) return;
        left.delete(id);
        if (held[i] !== 1) lost.add(id);
        runningTasks.get(id)?.abort(ABORT_CANCELLED);
      });
    };

    const group = jobOf(claim.queued);
    const version = contractOf(claim.queued);
    let byId: Map<string, JobData>;
    try {
      if (group.kind !== GROUP_JOB) throw new UnrecoverableError('a claim on a job that is not a group');
      if (version === null || version > contractVersion) {
        throw new UnrecoverableError(`a group of contract ${String(version)}, this worker reads ${contractVersion}`);
      }
      byId = new Map(checkedTasks(group).map((item) => [item.id, item.data]));
    } catch (err) {
      // Not this worker's to run: the group's own worker (of its contract) runs them, or fails the group.
      log.warn({ err, grupo: claim.group }, 'claimed tasks given back to their group');
      await rewrite(true);
      return;
    }

    const renewal = setInterval(() => {
      rewrite(false).catch((err: unknown) => log.warn({ err, grupo: claim.group }, 'claim renewal failed'));
    }, claim.renewMs);
    // A claimed task stopped (cancelled or closing) ends as runOne's callers expect a stop to.
    const stoppedTask = (aborted: AbortSignal): Promise<never> =>
      Promise.reject(new UnrecoverableError(String(aborted.reason ?? 'aborted')));
    try {
      for (const id of claim.tasks) {
        if (signal.aborted) break;
        if (!left.has(id)) continue;
        const data = byId.get(id);
        const startedAt = Date.now();
        const jobLog = log.child({ jobId: claim.group, tarefa: id, kind: data?.kind, claimed: true });
        let field: string;
        try {
          field =
            data === undefined
              ? finishedItem(startedAt, Date.now(), { why: 'erro' })
              : await runTask(id, data, jobLog, startedAt, signal, stoppedTask, false);
        } catch (err) {
          // Closing, or a bug or an infrastructure failure: what is left goes back to the group's own
          // worker, which retries it as it would its own.
          if (!signal.aborted) jobLog.warn({ err }, 'claimed task given back to its group');
          break;
        }
        left.delete(id);
        if (!lost.has(id)) steps.end(id, field);
      }
    } finally {
      clearInterval(renewal);
      // The claim's ends in one step (a claimer that dies before it leaves at most a claim's tasks
      // to run again, as an owner that dies leaves its running one); told when it is time.
      await steps.step('', '', false).catch(() => undefined);
      if (left.size > 0) await rewrite(true).catch(() => undefined);
    }
  }

  /** Tells the APIs every claimed end not told yet: the worker's look for claims has ended. */
  async function tellClaimed(): Promise<void> {
    const all = [...claimedSteps.values()];
    claimedSteps.clear();
    for (const steps of all) if (steps.pending()) await steps.step('', '', true).catch(() => undefined);
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
    return runOne(data, jobLog, signal, (aborted) => stopped(job, token, aborted));
  };
  return Object.assign(process, {
    runClaimed,
    tellClaimed,
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
