// BullMQ adapter of the JobRunner port (REDIS_URL set): the API enqueues, a worker (in this
// process under `npm start`, elsewhere under `start:worker`) runs the job, and the API waits.
//
// Waiting does not use `job.waitUntilFinished()`: it adds one listener per call, never settles
// for a job removed meanwhile, and has no deadline of its own. Instead the worker that ran a job
// tells its end to the API that queued it, on that API's own stream (addressed.ts), whose one
// reader per process dispatches `completed`/`failed` to the waiting requests (job-waiters.ts) and
// to the tasks; the waiting jobs' states are read back from Redis whenever that connection
// (re)connects and every few seconds while requests wait. While an older worker (one that tells
// no end) is connected, the queues' events streams are read as well, as they were before.
import { Queue, QueueEvents, QueueEventsProducer, type QueueEventsListener } from 'bullmq';
import {
  QueueUnavailableError,
  withTimeout,
  type Config,
  type JobData,
  type JobResult,
  type Logger,
  type RedisClient,
  type JobEnd,
  ADDRESSED_CONTRACT_VERSION,
  EVENTS_MAX_LEN,
  JOB_OPTIONS,
  JOB_QUEUE,
  TASK_ENDED_EVENT,
  TASK_QUEUE,
  endsStream,
  liveReaders,
  newApiAddress,
  readerKeys,
  readersOf,
  closeQueueEvents,
  closeRedisClient,
  createRedisClient,
  queueTelemetry,
  throttledErrorLog,
  withContract,
} from '@censo/shared';
import { JobWaiters, type JobState } from './job-waiters.js';
import type { JobRunner, RunOptions } from './runner.js';
import { createBullmqTaskExecution, type TaskQueue } from './bullmq-tasks.js';
import { sendCancel } from './cancels.js';
import { readEnds } from './ends-reader.js';
import type { TaskExecution } from '../tarefas/execution.js';

type TaskEndedListener = QueueEventsListener & { [TASK_ENDED_EVENT]: (args: { tarefas?: string }, id: string) => void };

/** Redis must accept a job this fast, else the request gets 503 rather than a long wait. */
const ENQUEUE_TIMEOUT_MS = 3_000;
/** How often the states of waiting requests' jobs are read back while any request waits. */
const RECONCILE_EVERY_MS = 5_000;
const PING_TIMEOUT_MS = 1_000;
/** A process that has just started gives its first connection this long before answering 503. */
const FIRST_CONNECT_WAIT_MS = 2_000;
/** close() waits this long at most for the cancellations of abandoned jobs to reach Redis. */
const CLOSE_CANCELS_MS = 2_000;
/** How often the API looks whether an older worker (one that tells no end) is connected, so it reads the events streams. */
const OLDER_WORKERS_EVERY_MS = 10_000;

/**
 * What Redis says of a job, for the waits' reconcile. The state is read before the record: a
 * record read first can predate the job's completion, and would give a completed job without
 * its result (the request then failed with a 500).
 */
export async function readJobState(queue: Pick<Queue<JobData, JobResult>, 'getJob' | 'getJobState'>, jobId: string): Promise<JobState> {
  const state = await queue.getJobState(jobId);
  if (state === 'unknown') return { state: 'missing' };
  if (state !== 'completed' && state !== 'failed') return { state: 'pending' };
  const job = await queue.getJob(jobId);
  if (!job) return { state: 'missing' };
  if (state === 'failed') return { state, reason: job.failedReason };
  // Still not there (a record half written): the next pass reads it again.
  return job.returnvalue ? { state, result: job.returnvalue } : { state: 'pending' };
}

export interface BullmqRunner extends JobRunner {
  readonly mode: 'bullmq';
  /** Requests currently waiting for a job (metrics; tests check that nothing leaks). */
  pendingCount(): number;
  /** The connection this runner enqueues on: the asynchronous tasks' records live beside the queue. */
  readonly redis: RedisClient;
  /** Asynchronous tasks' jobs, on a queue of their own (TASK_QUEUE, SPEC §7.5). */
  readonly tasks: TaskExecution;
}

export interface BullmqRunnerOptions {
  /**
   * The contract the core jobs are queued with (default CORE_JOB_CONTRACT_VERSION). Tests play a
   * release whose core jobs did not change, so that a worker from before addressed messages runs
   * them and the API's path for such a worker is exercised.
   */
  readonly coreContract?: number;
  /**
   * The shard this runner queues to, when QUEUE_SHARDS is above 1 (sharded.ts): it then says in
   * its log when no worker takes from it, as a worker started with fewer shards than the APIs
   * would leave its jobs waiting.
   */
  readonly shard?: number;
}

export function createBullmqRunner(config: Config, log: Logger, options: BullmqRunnerOptions = {}): BullmqRunner {
  const redis = config.redis;
  if (!redis) throw new Error('createBullmqRunner needs REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES');
  const prefix = config.queuePrefix;
  const logRedisError = throttledErrorLog(log);

  // The producer connection fails fast instead of queueing commands while Redis is away (no
  // offline queue, short timeouts): the request gets a 503 at once. ioredis keeps reconnecting
  // in the background, so the API recovers by itself when Redis returns.
  const producer = createRedisClient(redis, 'fail-fast', { commandTimeout: ENQUEUE_TIMEOUT_MS });
  producer.on('error', (err) => logRedisError('producer', err));
  // One shared promise rather than a listener per request (200 waiting requests would mean 200
  // listeners on the connection).
  let everReady = false;
  const firstReady = new Promise<void>((resolve) => producer.once('ready', resolve)).then(() => {
    everReady = true;
  });

  /**
   * Whether a job can be enqueued now. A lost or refused connection answers at once (the
   * request gets its 503 while ioredis reconnects in the background); only a first connection
   * still in progress, right after start, is worth a short wait.
   */
  const isUp = () => producer.status === 'ready';
  async function connected(): Promise<boolean> {
    if (isUp()) return true;
    // Lost after having worked, or the first attempt already failed: no point waiting.
    if (everReady || producer.status === 'reconnecting' || producer.status === 'end') return false;
    await withTimeout(firstReady, FIRST_CONNECT_WAIT_MS).catch(() => undefined);
    return isUp();
  }

  // XREAD BLOCK needs its own connection that never gives up on a command (BullMQ requires
  // maxRetriesPerRequest: null there); the events streams' QueueEvents open theirs as copies of
  // this lazy client, and the ends stream's reader has one of its own.
  const eventsTemplate = createRedisClient(redis, 'worker');
  const traced = queueTelemetry();
  const telemetry = traced ? { telemetry: traced } : {};
  /** This process's address: the workers tell the ends of its jobs to its own stream. */
  const api = newApiAddress();
  const ownEnds = endsStream(prefix, api);

  /** A queue on the producer connection and the route of its cancellations. */
  function open(name: string): TaskQueue {
    const events = new QueueEventsProducer(name, { connection: producer, prefix });
    events.on('error', (err) => logRedisError(`cancel producer ${name}`, err));
    const opened: TaskQueue = {
      // With tracing on, an enqueue is a span (PRODUCER) whose context travels in the job's options (bullmq-otel).
      queue: new Queue<JobData, JobResult>(name, {
        connection: producer,
        prefix,
        streams: { events: { maxLen: EVENTS_MAX_LEN } },
        ...telemetry,
      }),
      cancels: { client: producer, prefix, queue: name, events },
    };
    opened.queue.on('error', (err) => logRedisError(`queue ${name}`, err));
    return opened;
  }
  const sync = open(JOB_QUEUE);
  const { queue } = sync;

  const waiters = new JobWaiters({
    readState: (jobId) => readJobState(queue, jobId),
    abandon: (jobId, why) => abandon(jobId, why),
    log,
    reconcileEveryMs: RECONCILE_EVERY_MS,
  });

  // Cancellations run in the background (the request must not wait for them), but close()
  // gives them a moment to reach Redis.
  const cancelling = new Set<Promise<void>>();

  /**
   * The request ended before its job: remove the job if it is still waiting or delayed (a retry
   * in backoff), else ask whichever worker holds it to abort it. A job neither removed nor
   * cancelled here finds its upload folder gone and fails quietly.
   */
  function abandon(jobId: string, why: string): void {
    const work = (async () => {
      try {
        const removed = await queue.remove(jobId);
        if (removed === 1) {
          log.debug({ jobId, why }, 'queued job removed');
          return;
        }
        await sendCancel(sync.cancels, jobId, jobId);
        log.debug({ jobId, why }, 'cancellation sent to the worker holding the job');
      } catch (err) {
        log.warn({ err, jobId }, 'could not remove or cancel an abandoned job');
      }
    })();
    cancelling.add(work);
    void work.finally(() => cancelling.delete(work));
  }

  // The tasks' own queue (TASK_QUEUE); JOB_QUEUE stays the legacy place of tasks an API from
  // before it queued there (a rolling upgrade).
  const own = open(TASK_QUEUE);

  let closed = false;
  const tasks = createBullmqTaskExecution({
    ...own,
    legacy: sync,
    log,
    connected,
    redis: producer,
    prefix,
    groupSize: config.tarefasPorJob,
    fim: api,
    recordLifeMs: config.loteMaxMs + config.resultTtlMs,
  });

  /** A job's end, from this API's stream or an events stream: to the request waiting for it, and to the tasks. */
  const heard = {
    completed(jobId: string, result: JobResult) {
      waiters.completed(jobId, result);
      tasks.heard.completed(jobId);
    },
    failed(jobId: string, reason: string) {
      waiters.failed(jobId, reason);
      tasks.heard.failed(jobId);
    },
  };
  const onEnd = (end: JobEnd) => {
    if (end.event === TASK_ENDED_EVENT) return tasks.heard.tasksEnded(end.tarefas);
    if (end.event === 'failed') return heard.failed(end.jobId, end.failedReason);
    let result: JobResult;
    try {
      result = JSON.parse(end.returnvalue) as JobResult;
    } catch {
      return; // not a result: the wait reads the job itself
    }
    heard.completed(end.jobId, result);
  };
  // 'ready' fires on every (re)connect of the reader's connection: whatever finished while it was
  // away without telling is read back from the jobs themselves.
  const ends = readEnds(createRedisClient(redis, 'worker'), ownEnds, { onEnd, onReconnect: () => void waiters.reconcile(), log });

  /**
   * The events streams, read only while a worker older than ADDRESSED_CONTRACT_VERSION is
   * connected (a rolling upgrade): it tells no end to this API's stream. Every end there is heard
   * (the tasks keep only their own, the waits theirs).
   */
  let broadcast: QueueEvents[] | null = null;
  function listen(name: string): QueueEvents {
    const events = new QueueEvents(name, { connection: eventsTemplate, prefix });
    events.on('error', (err) => logRedisError(`queue events ${name}`, err));
    events.on('completed', ({ jobId, returnvalue }) => heard.completed(jobId, returnvalue as unknown as JobResult));
    events.on('failed', ({ jobId, failedReason }) => heard.failed(jobId, failedReason));
    events.getBackend().on('ready', () => void waiters.reconcile());
    if (name === TASK_QUEUE) {
      events.on<TaskEndedListener>(TASK_ENDED_EVENT, ({ tarefas }: { tarefas?: string }) => {
        if (tarefas) tasks.heard.tasksEnded(tarefas);
      });
    }
    return events;
  }
  let looking = false;
  /** Whether the last look found no worker on this shard's tasks queue (said once each way). */
  let unread = false;
  async function lookForOlderWorkers(): Promise<void> {
    if (looking || closed) return;
    looking = true;
    try {
      // A read of its own, not the group handshake's cached one: a look at start, before any
      // worker connects, must not stand for the first request's decision.
      const readers = await withTimeout(
        (async () => readersOf(await own.queue.getWorkers(), await liveReaders(producer, readerKeys(prefix, TASK_QUEUE).readers)))(),
        PING_TIMEOUT_MS * 3,
      );
      const older = readers.versions.filter((version) => version < ADDRESSED_CONTRACT_VERSION).length;
      if (closed) return;
      if (options.shard !== undefined && (readers.workers === 0) !== unread) {
        unread = readers.workers === 0;
        // The logger binds `shard` already (a key twice in a line is refused by log pipelines, SPEC §9).
        if (unread) log.warn("no worker takes from this shard: start the workers with QUEUE_SHARDS as large as the APIs'");
        else log.info({ workers: readers.workers }, 'workers take from this shard');
      }
      if (older > 0 && !broadcast) {
        broadcast = [listen(JOB_QUEUE), listen(TASK_QUEUE)];
        log.info({ older, workers: readers.workers }, 'reading the events streams: a connected worker tells no job end to its API');
      } else if (older === 0 && broadcast) {
        const closing = broadcast;
        broadcast = null;
        await Promise.allSettled(closing.map((events) => closeQueueEvents(events)));
        log.info({ workers: readers.workers }, 'events streams no longer read: every connected worker tells its jobs ends to their API');
      }
    } catch {
      // Redis away: the next look decides.
    } finally {
      looking = false;
    }
  }
  producer.once('ready', () => void lookForOlderWorkers());
  const looker = setInterval(() => void lookForOlderWorkers(), OLDER_WORKERS_EVERY_MS).unref();

  return {
    mode: 'bullmq',

    pendingCount: () => waiters.size,
    redis: producer,
    tasks,

    async run(data: JobData, { signal, deadline, id }: RunOptions): Promise<JobResult> {
      if (closed) throw new QueueUnavailableError();
      signal.throwIfAborted();
      // Not connected (down, or still reconnecting): answer now rather than wait for Redis.
      if (!(await connected())) throw new QueueUnavailableError();
      signal.throwIfAborted();

      const wait = waiters.wait(id, signal, deadline);
      // Its end is told to this process's stream (addressed.ts).
      const queued = { ...withContract(data, options.coreContract), fim: api };
      withTimeout(queue.add(data.kind, queued, { ...JOB_OPTIONS, jobId: id }), ENQUEUE_TIMEOUT_MS).then(
        () => wait.enqueued(),
        (err: unknown) => {
          log.warn({ err, jobId: id }, 'could not enqueue job');
          wait.enqueueFailed(new QueueUnavailableError({ cause: err }));
        },
      );
      return wait.result;
    },

    async counts(): Promise<Record<string, number>> {
      // Read on every /metrics scrape: a short deadline so a slow Redis cannot stall the scrape.
      if (!isUp()) throw new QueueUnavailableError();
      return withTimeout(queue.getJobCounts('waiting', 'active', 'delayed', 'failed'), PING_TIMEOUT_MS);
    },

    async isReady(): Promise<boolean> {
      if (!(await connected())) return false;
      try {
        return (await withTimeout(producer.ping(), PING_TIMEOUT_MS)) === 'PONG';
      } catch {
        return false;
      }
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      // The app closes the runner after its in-flight requests have ended, so normally nothing
      // waits here; anything left is abandoned like a request that went away.
      waiters.failAll(() => new QueueUnavailableError());
      clearInterval(looker);
      await tasks.close();
      await withTimeout(Promise.allSettled([...cancelling]), CLOSE_CANCELS_MS).catch(() => undefined);
      await Promise.allSettled([
        ends.close(),
        ...(broadcast ?? []).map((events) => closeQueueEvents(events)),
        ...[sync, own].flatMap((opened) => [opened.cancels.events.close(), opened.queue.close()]),
      ]);
      broadcast = null;
      // Nobody reads this process's stream any more (it would go by itself within ENDS_TTL_MS).
      if (isUp()) await withTimeout(producer.del(ownEnds), PING_TIMEOUT_MS).catch(() => undefined);
      // Also ends the reconnection attempts of a producer that never reached Redis.
      producer.disconnect();
      await closeRedisClient(eventsTemplate);
    },
  };
}
