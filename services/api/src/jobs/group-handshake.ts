// The API's side of the contract handshake (SPEC §12, readers.ts): whether a request's tasks may
// share a group job now, and the rescue of jobs that every live worker handed back as too new for
// it (a rollback). Both read the same thing: the workers connected to the tasks' queue and the
// contract each of them announced.
import type { Queue } from 'bullmq';
import {
  CORE_JOB_CONTRACT_VERSION,
  GROUP_JOB,
  GROUP_JOB_CONTRACT_VERSION,
  TASK_QUEUE,
  contractOf,
  groupsAllowed,
  jobOf,
  liveReaders,
  readerKeys,
  readersOf,
  throttledErrorLog,
  withContract,
  type JobData,
  type JobResult,
  type Logger,
  type QueuedJobData,
  type Readers,
  type RedisClient,
} from '@censo/shared';

/** How long the live workers' contracts, read from Redis, are taken as they were: a request pays no round trip for them. */
export const READERS_CACHE_MS = 5_000;

/** Handed-back jobs looked at per housekeeping pass. */
const RESCUE_BATCH = 100;

/** The kinds of job this API writes: it relabels only a job whose data is one of them (it could have sent it itself). */
const KNOWN_KINDS: ReadonlySet<string> = new Set<JobData['kind']>(['divergencias', 'retorno-rf', 'censo-corrigido']);

/**
 * The rescue's atomic claim: the job's data replaced only if it is still the data read (another API
 * may have relabelled it already), it is not held by a worker (no lock) and has not finished; the
 * job leaves the handed-back set either way. 1 relabelled, 0 held now (try again later), -1 nothing to do.
 * KEYS: the job's hash, its lock, the handed-back set; ARGV: the data read, the new data, the job id.
 */
const RELABEL = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local data = redis.call('HGET', KEYS[1], 'data')
if (not data) or data ~= ARGV[1] or redis.call('HEXISTS', KEYS[1], 'finishedOn') == 1 then
  redis.call('ZREM', KEYS[3], ARGV[3])
  return -1
end
redis.call('HSET', KEYS[1], 'data', ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[3])
return 1`;

type RelabelClient = RedisClient & {
  censoRelabel(job: string, lock: string, handedBack: string, read: string, next: string, id: string): Promise<number>;
};

export interface GroupHandshakeDeps {
  readonly queue: Queue<JobData, JobResult>;
  /** The queue's connection: the announcements and the handed-back jobs live beside the queue. */
  readonly client: RedisClient;
  readonly prefix: string;
  /** TAREFAS_POR_JOB: the most a group carries, when the live workers read groups. */
  readonly groupSize: number;
  readonly log: Logger;
  /** Runs a Redis call within the execution's bounds (a 503 rather than a wait while Redis is away). */
  readonly redis: <T>(work: () => Promise<T>) => Promise<T>;
}

export interface GroupHandshake {
  /** How many tasks a group job may carry now (TaskExecution.groupSize). */
  groupSizeNow(): Promise<number>;
  /** One pass of the rescue of handed-back jobs. */
  rescue(): Promise<void>;
  /** The live workers' contracts (cached READERS_CACHE_MS): whether an older one still needs the events stream. */
  liveWorkers(): Promise<Readers>;
}

export function createGroupHandshake({ queue, client, prefix, groupSize, log, redis }: GroupHandshakeDeps): GroupHandshake {
  const handshake = readerKeys(prefix, TASK_QUEUE);
  const logError = throttledErrorLog(log);
  const relabeller = client as RelabelClient;
  if (typeof relabeller.censoRelabel !== 'function') client.defineCommand('censoRelabel', { numberOfKeys: 3, lua: RELABEL });

  /** The live workers' contracts (readers.ts), read at most every READERS_CACHE_MS; one read at a time. */
  let readersSeen: { readonly at: number; readonly readers: Readers } | null = null;
  let readersReading: Promise<Readers> | null = null;
  async function liveWorkers(): Promise<Readers> {
    if (readersSeen && Date.now() - readersSeen.at < READERS_CACHE_MS) return readersSeen.readers;
    readersReading ??= redis(async () => {
      // The list first: a worker that connects in between has announced before its connection shows.
      const connected = await queue.getWorkers();
      return readersOf(connected, await liveReaders(client, handshake.readers));
    })
      .then((readers) => {
        readersSeen = { at: Date.now(), readers };
        return readers;
      })
      .finally(() => (readersReading = null));
    return readersReading;
  }

  /** Whether groups were on at the last decision, for a log line when that changes. */
  let groupsWereOn: boolean | null = null;
  /** The NOPERM line is said once a process. */
  let noPermSaid = false;
  async function groupSizeNow(): Promise<number> {
    if (groupSize <= 1) return 1;
    let readers: Readers;
    try {
      readers = await liveWorkers();
    } catch (err) {
      if (isNoPerm(err)) {
        // Redis is there, but the service user may not list clients (issue 59: the old line said
        // the queue was away). Nothing to retry: say once what to allow, and queue a job per task.
        if (!noPermSaid) {
          noPermSaid = true;
          log.warn(
            { err: { message: String((err as Error).message) } },
            'group jobs off: a job per task; the Redis user may not run CLIENT LIST (allow +client|list, docs/operacao.md)',
          );
        }
        return 1;
      }
      // Redis away: the request gets its 503 from submit; no group is made on a guess meanwhile.
      logError('workers of the tasks queue', err);
      return 1;
    }
    const decision = groupsAllowed(readers, GROUP_JOB_CONTRACT_VERSION, CORE_JOB_CONTRACT_VERSION);
    if (decision.on !== groupsWereOn) {
      groupsWereOn = decision.on;
      // The operator's line (docs/operacao.md): whether group jobs are on, and why.
      log.info(
        {
          tarefasPorJob: groupSize,
          contrato: GROUP_JOB_CONTRACT_VERSION,
          workers: readers.workers,
          versoes: readers.versions,
          motivo: decision.motivo,
        },
        decision.on ? 'group jobs on' : 'group jobs off: a job per task',
      );
    }
    return decision.on ? groupSize : 1;
  }

  /**
   * The rescue (SPEC §12): jobs workers gave back as too new for them. One that a live worker
   * reads is left to it; one that none reads is relabelled with the contract this API gives such
   * a job, if a live worker reads that and the job is one this API could have sent. The claim is
   * atomic (RELABEL), so two APIs at once relabel it once.
   */
  async function rescue(): Promise<void> {
    const ids = await redis(() => client.zrange(handshake.handedBack, 0, RESCUE_BATCH - 1));
    if (ids.length === 0) return;
    const readers = await liveWorkers();
    if (readers.workers === 0) return; // no reader to judge by: the next pass
    const newest = Math.max(...readers.versions);
    for (const id of ids) {
      const jobKey = `${prefix}:${TASK_QUEUE}:${id}`;
      const raw = await redis(() => client.hget(jobKey, 'data'));
      const queued = raw === null ? null : (JSON.parse(raw) as QueuedJobData);
      const contract = queued === null ? null : contractOf(queued);
      if (queued === null || contract === null || contract <= newest) {
        // Gone, not ours to judge, or a live worker reads it: nothing stranded.
        await redis(() => client.zrem(handshake.handedBack, id));
        continue;
      }
      const job = jobOf(queued);
      const ours =
        job.kind === GROUP_JOB
          ? Array.isArray(job.tarefas) && job.tarefas.every((item) => KNOWN_KINDS.has(item?.data?.kind))
          : KNOWN_KINDS.has(job.kind);
      const relabelled = withContract(job);
      if (!ours || relabelled.contract > newest) {
        log.warn(
          { jobId: id, contract, newest, ours },
          'job stranded: no live worker reads its contract, and this API cannot relabel it for them (upgrade the workers)',
        );
        continue;
      }
      const done = await redis(() =>
        relabeller.censoRelabel(jobKey, `${jobKey}:lock`, handshake.handedBack, raw!, JSON.stringify(relabelled), id),
      );
      if (done === 1) log.info({ jobId: id, from: contract, to: relabelled.contract }, 'stranded job relabelled for the live workers');
    }
  }

  return { groupSizeNow, rescue, liveWorkers };
}

/** A Redis ACL refusal (`NOPERM …`): the user lacks a command's permission; retrying changes nothing. */
function isNoPerm(err: unknown): boolean {
  return err instanceof Error && /^NOPERM\b/.test(err.message);
}
