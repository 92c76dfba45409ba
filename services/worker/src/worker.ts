// The worker role: takes jobs from the BullMQ queue and runs them on a worker-thread pool.
// Used alone by `npm run start:worker` and next to the API by `npm start` (Redis configured).
import { QueueEvents, WaitingError, Worker, type Job, type QueueEventsListener } from 'bullmq';
import {
  ABORT_CANCELLED,
  ABORT_SHUTDOWN,
  BATCH_NICENESS,
  CANCEL_EVENT,
  GROUP_JOB,
  HELP_MESSAGE,
  closeQueueEvents,
  JOB_CONTRACT_VERSION,
  JOB_QUEUE,
  TASK_QUEUE,
  MAX_STALLED_COUNT,
  UPLOAD_GONE,
  ANNOUNCE_TTL_MS,
  announceEveryMs,
  announceReader,
  newWorkerName,
  shardPrefixes,
  readerKeys,
  withdrawReader,
  cancelChannel,
  endsStream,
  endsTo,
  tellEnd,
  type JobEnd,
  createJobPool,
  createStorage,
  type JobExecutor,
  type Storage,
  loadColumnsFile,
  settlesWithin,
  throttledErrorLog,
  closeRedisClient,
  createRedisClient,
  queueTelemetry,
  type Config,
  type GroupSummary,
  type JobResult,
  type QueuedJobData,
} from '@censo/shared';
import type { Logger } from 'pino';
import type { Metric } from 'prom-client';
import { createSharer } from './claims.js';
import { createFailoverMetrics } from './failover-metrics.js';
import { HAND_BACK_PAUSE_MS, createProcessor, type JobProcessor } from './processor.js';
import { Threads } from './threads.js';

export interface StartWorkerOptions {
  /** Runs the jobs instead of a new worker-thread pool (tests). Closed with the worker. */
  readonly executor?: JobExecutor & { close?(): Promise<void> };
  /** Runs the asynchronous tasks' jobs instead of a pool of their own (tests); default `executor` when that is given. */
  readonly taskExecutor?: JobExecutor & { close?(): Promise<void> };
  /**
   * How long close() lets active jobs finish before handing them back to the queue.
   * Default: JOB_TIMEOUT_MS capped at 20 s (the API stops waiting after JOB_TIMEOUT_MS anyway,
   * and orchestrators usually kill a process 30 s after SIGTERM).
   */
  readonly drainMs?: number;
  /** The storage the API writes to; default: from the config (closed with the worker only then). */
  readonly storage?: Storage;
  /** The newest job contract this worker knows; default JOB_CONTRACT_VERSION (tests play N and N+1). */
  readonly contractVersion?: number;
  /**
   * Whether it announces its contract in Redis (readers.ts); default true. False plays a worker
   * of a version from before the announcement (tests).
   */
  readonly announce?: boolean;
  /** How long its announcement counts without renewal; default ANNOUNCE_TTL_MS (tests shorten it). */
  readonly announceTtlMs?: number;
  /**
   * Whether it hears cancellations on its own channel and tells its jobs' ends to their APIs
   * (addressed.ts); default true. False plays a worker from before ADDRESSED_CONTRACT_VERSION,
   * which reads the queue's events stream for cancellations and tells no API anything (tests).
   */
  readonly addressed?: boolean;
  /** Whether it shares groups with other workers (claims.ts); default true. False plays a worker from before that (tests). */
  readonly shares?: boolean;
}

export interface RunningWorker {
  /** The synchronous requests' jobs (JOB_QUEUE). */
  readonly worker: Worker<QueuedJobData, JobResult | GroupSummary>;
  /** The asynchronous tasks' jobs (TASK_QUEUE), on threads of their own at a lower priority. */
  readonly tasks: Worker<QueuedJobData, JobResult | GroupSummary>;
  /** Every queue it takes from: `worker` and `tasks`, then each further shard's two (QUEUE_SHARDS). */
  readonly queues: readonly Worker<QueuedJobData, JobResult | GroupSummary>[];
  /** Where its jobs' files are (readiness checks the bucket). */
  readonly storage: Storage;
  /** The name of its Redis connections, under which it announces its contract (readers.ts). */
  readonly name: string;
  /**
   * Metrics of its own for the process's /metrics (the health server's registry, or the API's
   * under `npm start`): censo_redis_failovers_total with Sentinel, none otherwise.
   */
  readonly metrics: readonly Metric[];
  /** Resolves once connected to Redis (tests; production code need not wait). */
  waitUntilReady(): Promise<void>;
  /** Stops taking jobs, lets active ones finish within the drain time, then returns the rest. */
  close(): Promise<void>;
}

type CancelListener = QueueEventsListener & { [CANCEL_EVENT]: (args: { jobId?: string }, id: string) => void };

/** Grace given to processors to hand their jobs back once the drain time is over. */
const HAND_BACK_MS = 5_000;

/** What a process's shards share: one pool per kind, one storage, one count of busy threads per kind, one name. */
interface ShardShared {
  readonly executor: JobExecutor & { close?(): Promise<void> };
  readonly taskExecutor: JobExecutor & { close?(): Promise<void> };
  readonly storage: Storage;
  /** Whether the storage is this worker's own (closed with it). */
  readonly ownsStorage: boolean;
  /** The pools' threads, by queue: a job that finds every thread of its kind taken goes back (threads.ts). */
  readonly threads: { readonly sync: Threads; readonly tasks: Threads };
  readonly name: string;
  /** Only shard 0 counts failovers: every shard's connections follow the same sentinels. */
  readonly countsFailovers: boolean;
}

/**
 * Does not wait for Redis: a worker started while Redis is down connects when it returns. With
 * QUEUE_SHARDS above 1 it takes from every shard (shards.ts): a shard's queues, cancellations and
 * announcement each as a worker of one shard has them, over one pool per kind, so the process runs
 * WORKER_CONCURRENCY jobs of each kind at a time whichever shards they come from: each shard's
 * BullMQ worker may take up to WORKER_CONCURRENCY (a shard alone busy must fill the pool), and a
 * job that finds every thread of its kind taken by other shards' jobs goes back to its queue
 * (threads.ts).
 */
export async function startWorker(config: Config, log: Logger, options: StartWorkerOptions = {}): Promise<RunningWorker> {
  if (!config.redis) throw new Error('REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES is required to run a worker');
  const concurrency = config.workerConcurrency;
  // One thread per parallel job: BullMQ's concurrency and the pool size are the same number.
  // Two pools, two queues (SPEC §7.5): the synchronous requests' jobs never wait for a slot or a
  // thread behind a burst of tasks, and the tasks' threads run at BATCH_NICENESS, so when both
  // want the cores the interactive ones get them (measured in BENCHMARKS.md section 6).
  const vocabulary = await loadColumnsFile(config.columnsFile);
  const executor = options.executor ?? createJobPool({ threads: concurrency, vocabulary });
  const taskExecutor =
    options.taskExecutor ?? options.executor ?? createJobPool({ threads: concurrency, vocabulary, niceness: BATCH_NICENESS });
  const storage = options.storage ?? (await createStorage(config, log));
  // One shard: BullMQ's concurrency already bounds the jobs, and a count without a bound never hands one back.
  const bound = config.queueShards > 1 ? concurrency : Infinity;
  const threads = { sync: new Threads(bound), tasks: new Threads(bound) };
  const shared = { executor, taskExecutor, storage, ownsStorage: !options.storage, threads };
  // Its connections carry this name (CLIENT LIST), and its announcement says what that name reads.
  const name = newWorkerName();
  if (config.queueShards <= 1) return startShard(config, log, options, { ...shared, name, countsFailovers: true }, null);

  const prefixes = shardPrefixes(config.queuePrefix, config.queueShards);
  // The pools and the storage are the process's: a shard's close leaves them to the whole.
  const kept = { executor: { run: executor.run.bind(executor) }, taskExecutor: { run: taskExecutor.run.bind(taskExecutor) } };
  const shards = await Promise.all(
    prefixes.map((queuePrefix, shard) =>
      startShard(
        { ...config, queuePrefix },
        log,
        options,
        { ...shared, ...kept, ownsStorage: false, name, countsFailovers: shard === 0 },
        shard,
      ),
    ),
  );
  let closing: Promise<void> | undefined;
  return {
    worker: shards[0]!.worker,
    tasks: shards[0]!.tasks,
    queues: shards.flatMap((shard) => shard.queues),
    storage,
    name,
    metrics: shards[0]!.metrics,
    async waitUntilReady() {
      await Promise.all(shards.map((shard) => shard.waitUntilReady()));
    },
    close() {
      closing ??= (async () => {
        const closed = Promise.allSettled(shards.map((shard) => shard.close()));
        // A shard waiting for a thread stops waiting: it is closing.
        threads.sync.wakeAll();
        threads.tasks.wakeAll();
        await closed;
        await Promise.allSettled([executor.close?.(), taskExecutor === executor ? undefined : taskExecutor.close?.()]);
        if (shared.ownsStorage) storage.close();
      })();
      return closing;
    },
  };
}

/** One shard's worker (the whole worker when there is one shard): `config.queuePrefix` is the shard's. */
async function startShard(
  config: Config,
  baseLog: Logger,
  options: StartWorkerOptions,
  { executor, taskExecutor, storage, ownsStorage, threads, name, countsFailovers }: ShardShared,
  shard: number | null,
): Promise<RunningWorker> {
  if (!config.redis) throw new Error('REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES is required to run a worker');
  const log = shard === null ? baseLog : baseLog.child({ shard });
  const concurrency = config.workerConcurrency;
  const drainMs = options.drainMs ?? Math.min(config.jobTimeoutMs, 20_000);
  // Lazy: the Workers and the cancellations' subscriber below each open their own copies of it, all following
  // the sentinels through one watcher, which reports each failover once.
  const failovers = countsFailovers ? createFailoverMetrics(config.redis) : null;
  const connection = createRedisClient(config.redis, 'worker', {}, { onMasterSwitch: failovers?.onMasterSwitch });
  const onError = throttledErrorLog(log);
  const contractVersion = options.contractVersion ?? JOB_CONTRACT_VERSION;
  const addressed = options.addressed ?? true;
  const traced = queueTelemetry();
  const telemetry = traced ? { telemetry: traced } : {};

  // The pause after giving a job back ends before BullMQ first renews the job's lock (a quarter
  // of the lock's duration after the job started): that lock is gone with the job, and renewing
  // it would log an error.
  const handBackPauseMs = Math.min(HAND_BACK_PAUSE_MS, config.workerLockDurationMs / 8);
  // A shard waiting for a thread (threads.ts) is woken when one frees; this bounds how often a
  // saturated worker's other shards look again (each look a fetch and a hand-back).
  const threadWaitMs = config.workerLockDurationMs / 8;
  /** This shard's jobs whose processor runs now: with none, a closing shard has nothing to drain. */
  let running = 0;
  const counted =
    (processor: JobProcessor, queue: string): JobProcessor =>
    // Three declared parameters, as the processor's own: BullMQ passes the signal by arity.
    async (job, token, signal) => {
      const kind = queue === TASK_QUEUE ? threads.tasks : threads.sync;
      if (!kind.tryTake()) {
        // Every thread of its kind runs another shard's job: back to its queue, its attempt not
        // spent, where an idle worker may take it; this shard waits for a thread (threads.ts).
        if (!token) throw new Error('a job can only be given back with its lock token');
        await job.moveToWait(token);
        await kind.freed(threadWaitMs, signal);
        throw new WaitingError();
      }
      running++;
      try {
        return await processor(job, token, signal);
      } finally {
        running--;
        kind.release();
      }
    };
  // A worker shares groups (claims.ts) unless a test plays one from before that: one of an older
  // contract, or one that hears no cancellations of its own (a claimed task's come to its channel).
  const shares = addressed && (options.shares ?? true) && contractVersion >= JOB_CONTRACT_VERSION;
  const consume = (queue: string, jobs: JobExecutor) => {
    // Only the tasks' queue carries group jobs; their tasks' states go through the same connection.
    const groups = queue === TASK_QUEUE ? { redis: connection, prefix: config.queuePrefix, queue, shares } : undefined;
    const processor = createProcessor(jobs, {
      storage,
      log,
      contractVersion,
      handBackPauseMs,
      ...(groups ? { groups: { ...groups, addressed } } : {}),
    });
    const worker = new Worker<QueuedJobData, JobResult | GroupSummary>(queue, counted(processor, queue), {
      connection,
      name,
      prefix: config.queuePrefix,
      concurrency,
      lockDuration: config.workerLockDurationMs,
      stalledInterval: config.workerStalledIntervalMs,
      maxStalledCount: MAX_STALLED_COUNT,
      // With tracing on, a job's run is a span (CONSUMER) in its producer's trace (bullmq-otel).
      ...telemetry,
    });
    worker.on('error', (err) => onError(`worker ${queue}`, err));
    worker.on('failed', (job, err) => {
      const bindings = { jobId: job?.id, kind: job?.name, attempts: job?.attemptsMade, queue };
      if (err.message === UPLOAD_GONE || err.message === ABORT_CANCELLED) {
        log.debug({ ...bindings, reason: err.message }, 'job dropped: its request has ended');
      } else {
        log.error({ ...bindings, err }, 'job failed');
      }
    });
    worker.on('stalled', (jobId) => log.warn({ jobId, queue }, 'job stalled (its worker stopped); back in the queue'));

    // A job's end is told to the API that queued it, and to it alone (addressed.ts): after BullMQ
    // has recorded it, so the API that reads it finds the job finished. One lost (this process
    // dies in between) is found by the API's reads of its jobs' states, as a missed event was.
    const tell = (job: Job<QueuedJobData> | undefined, end: JobEnd) => {
      const api = job && addressed ? endsTo(job.data) : null;
      if (api === null) return;
      tellEnd(connection, endsStream(config.queuePrefix, api), end).catch((err: unknown) => onError(`job end ${queue}`, err));
    };
    // A group job's completion is not told: its API heard each task's end from the group's steps
    // (TASK_ENDED_EVENT, the last one with the group's last step), and a completed group needs
    // nothing more of it (issue 55: a MULTI of four commands a group, and an XREAD's wake-up, for
    // nothing). Its failure for good still is: it ends the tasks it had not run.
    worker.on('completed', (job, result) => {
      if (job.name === GROUP_JOB) return;
      tell(job, { event: 'completed', jobId: String(job.id), returnvalue: JSON.stringify(result) });
    });
    worker.on('failed', (job, err) => {
      // Only a failure for good: one retried has no end yet (BullMQ sets finishedOn only then).
      if (job && typeof job.finishedOn === 'number') tell(job, { event: 'failed', jobId: String(job.id), failedReason: err.message });
    });
    return { worker, processor };
  };
  const sync = consume(JOB_QUEUE, executor);
  const tasks = consume(TASK_QUEUE, taskExecutor);
  const worker = sync.worker;

  // Sharing others' groups (issue 55): a worker that reads their contract claims waiting tasks of
  // a running group when its tasks' queue has nothing for it, and runs them beside its own slots'
  // count (a job that arrives meanwhile waits for the pool's thread, not for the claim).
  const sharer = shares
    ? createSharer({
        redis: connection,
        prefix: config.queuePrefix,
        queue: TASK_QUEUE,
        worker: tasks.worker.id,
        processor: tasks.processor,
        // The process's slots, not the shard's: its pool runs every shard's tasks.
        idle: () => threads.tasks.taken < concurrency,
        log,
        // A claim is held as a job's lock is: without renewal for WORKER_LOCK_DURATION_MS, its worker is taken for gone.
        leaseMs: config.workerLockDurationMs,
        renewMs: Math.max(100, Math.round(config.workerLockDurationMs / 3)),
      })
    : null;
  if (sharer) tasks.worker.on('drained', () => sharer.wake());

  // Cancellation across processes: an API that no longer waits for a job this worker holds
  // publishes its id on this worker's own channel (its BullMQ id is in the job's lock); nothing
  // else reaches this process (addressed.ts). Pub/Sub delivers at most once: a cancellation lost
  // across a reconnection only lets the job run to its end, whose result nobody records.
  const olderEvents: QueueEvents[] = [];
  const byChannel = new Map(
    [
      { queue: JOB_QUEUE, ...sync },
      { queue: TASK_QUEUE, ...tasks },
    ].map((one) => [cancelChannel(config.queuePrefix, one.queue, one.worker.id), one]),
  );
  const cancels = connection.duplicate();
  cancels.on('error', (err) => onError('cancellations', err));
  const cancel = (one: (typeof sync & { queue: string }) | undefined, jobId: string | undefined) => {
    if (!one || !jobId) return;
    if (one.worker.cancelJob(jobId, ABORT_CANCELLED)) log.info({ jobId, queue: one.queue }, 'job cancelled');
    else if (one.processor.cancelTask(jobId)) log.info({ tarefa: jobId, queue: one.queue }, 'group task cancelled');
  };
  cancels.on('message', (channel: string, jobId: string) => {
    // An owner starting a group wakes this worker, idle, to share it (claims.ts), on the same channel.
    if (jobId === HELP_MESSAGE) sharer?.wake();
    else cancel(byChannel.get(channel), jobId);
  });
  const subscribed = addressed ? cancels.subscribe(...byChannel.keys()).then(() => undefined) : playOlder();
  // A worker stopped as it starts (a rollout's SIGTERM, a scale-down) closes this client while its
  // SUBSCRIBE is on the way, and ioredis fails it with "Connection is closed.": the close's doing, not Redis's.
  let closing: Promise<void> | undefined;
  subscribed.catch((err: unknown) => {
    if (!closing) onError('cancellations', err);
  });

  /** A worker from before ADDRESSED_CONTRACT_VERSION (tests): the queues' events streams, read for CANCEL_EVENT. */
  async function playOlder(): Promise<void> {
    const streams = [...byChannel.values()].map((one) => {
      const events = new QueueEvents(one.queue, { connection, prefix: config.queuePrefix });
      events.on('error', (err) => onError(`cancel events ${one.queue}`, err));
      events.on<CancelListener>(CANCEL_EVENT, ({ jobId }: { jobId?: string }) => cancel(one, jobId));
      olderEvents.push(events);
      return events.waitUntilReady();
    });
    await Promise.all(streams);
  }

  // The announcement (readers.ts): at each (re)connection and a third of its life after, one
  // command every 20 s while idle. Only the tasks' queue carries group jobs and their rescue.
  const announceTtlMs = options.announceTtlMs ?? ANNOUNCE_TTL_MS;
  const readersKey = readerKeys(config.queuePrefix, TASK_QUEUE).readers;
  let announcing = false;
  const announce = () => {
    // One at a time: while Redis is away the command waits for the reconnection, and the next
    // 'ready' announces anyway.
    if (announcing) return;
    announcing = true;
    announceReader(connection, readersKey, name, contractVersion, announceTtlMs)
      .catch((err: unknown) => onError('contract announcement', err))
      .finally(() => (announcing = false));
  };
  const announces = options.announce ?? true;
  let renewal: NodeJS.Timeout | undefined;
  if (announces) {
    connection.on('ready', announce);
    if (connection.status === 'ready') announce();
    renewal = setInterval(announce, announceEveryMs(announceTtlMs)).unref();
  }

  log.info(
    {
      queue: JOB_QUEUE,
      taskQueue: TASK_QUEUE,
      prefix: config.queuePrefix,
      concurrency,
      contract: contractVersion,
      name,
      announces,
      // The id its claims on others' group tasks carry (`"o"` in a task's field) and its channels end with.
      tasksWorker: tasks.worker.id,
      shares: sharer !== null,
    },
    'worker started',
  );

  return {
    worker,
    tasks: tasks.worker,
    queues: [sync.worker, tasks.worker],
    storage,
    name,
    metrics: failovers ? [failovers.counter] : [],
    async waitUntilReady() {
      await Promise.all([sync.worker.waitUntilReady(), tasks.worker.waitUntilReady(), subscribed]);
    },
    close() {
      closing ??= (async () => {
        // Its announcement goes first: an API that asks now counts it no more, so it queues no
        // group for a worker that is leaving (its connection is gone from the list soon after).
        if (renewal) clearInterval(renewal);
        connection.off('ready', announce);
        if (announces && connection.status === 'ready') {
          await settlesWithin(
            withdrawReader(connection, readersKey, name, contractVersion).catch(() => undefined),
            1_000,
          );
        }
        // worker.close() has no timeout of its own, and a second close(true) would only return
        // the same pending promise; so past the drain time, abort the active jobs, and the
        // processor hands each one back to the queue (moveToWait) for another worker.
        //
        // BullMQ's orderly close waits for its blocking connection to end, which a client that
        // cannot reach Redis (every Sentinel down, say) never does (taskforcesh/bullmq#4656): such
        // a worker used to wait out the drain and the hand-back, ~27 s, with no job to drain. With
        // no job running and Redis out of reach it closes at once; a job the worker holds keeps
        // its drain (Redis may come back in time to record it).
        // Claimed tasks not started go back to their groups first; the one running ends or goes back too.
        // Bounded: with Redis out of reach a claim's commands wait for a reconnection that may not come.
        await settlesWithin(sharer?.close() ?? Promise.resolve(), connection.status === 'ready' ? drainMs : 1_000);
        const both = [sync.worker, tasks.worker];
        const force = running === 0 && connection.status !== 'ready';
        const closed = Promise.all(both.map((one) => one.close(force).catch((err: unknown) => log.error({ err }, 'worker close failed'))));
        if (!(await settlesWithin(closed, drainMs))) {
          log.warn({ drainMs }, 'drain time over: handing active jobs back to the queue');
          for (const one of both) one.cancelAllJobs(ABORT_SHUTDOWN);
          if (!(await settlesWithin(closed, HAND_BACK_MS))) {
            log.error('worker did not close in time; its jobs are retried once their locks expire');
          }
        }
        // The cancellations' connection: one that cannot reach Redis is dropped at once.
        await Promise.allSettled([
          closeRedisClient(cancels, connection.status === 'ready' ? undefined : 0),
          ...olderEvents.map((events) => closeQueueEvents(events, connection.status === 'ready' ? undefined : 0)),
          executor.close?.(),
          taskExecutor === executor ? undefined : taskExecutor.close?.(),
        ]);
        await closeRedisClient(connection);
        if (ownsStorage) storage.close();
        log.info('worker closed');
      })();
      return closing;
    },
  };
}
