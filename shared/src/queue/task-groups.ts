// Several asynchronous tasks carried by one job (issue 35). A state's burst sends its returns 50 to
// a request; one BullMQ job, one hand-off and one set of queue events per task cost more than the
// job itself for a school's small return (BENCHMARKS.md "the per-task floor"). A group job carries
// a request's tasks; each task keeps its own state, as one field of the group's hash in Redis, so
// the API answers, cancels, times out and records each task exactly as it does a task of its own.
//
// The field of a task, its whole life in the group:
//   `{}`                      waiting (written before the job is queued)
//   `{"s":t}`                 its item runs since t on the group job's worker (or ran, in an
//                             attempt that did not finish)
//   `{"s":t,"o":w,"l":u}`     claimed by worker w, an idle one sharing the group's work (below),
//                             and runs there since t; its claim lasts until u unless renewed
//   `{"f":t,"s":t0,"r":res}`  finished with the job result `res`
//   `{"f":t,"s":t0,"w":why}`  stopped without a result: `cancelado` (its upload was gone) or `erro`
//   absent                    gone: cancelled or recorded (the task's job is then "missing")
// A field once gone is never written again: the worker's writes only replace a field that exists.
//
// Sharing a group (issue 55). A request stays one group job of up to TAREFAS_POR_JOB tasks, whose
// BullMQ bookkeeping (~60 commands) its tasks share; splitting it into a group per worker kept
// the tail short but cost 16 and 23 Redis calls a file with 8 and 16 workers (CLUSTER.md). Instead
// a worker with nothing to run claims a few waiting tasks from the back of an open group, while
// the group job's worker (its owner) runs them from the front: a work-stealing deque whose two
// ends meet. The owner opens its group when it starts it: the group's `partilha` hash holds its
// task order (`ids`) and how far from the back claims have reached (`fim`), the open groups are a
// sorted set by age, and idle workers hear of it on a channel. A claim is leased as a job's lock
// is (WORKER_LOCK_DURATION_MS, 30 s by default): its claimer renews the lease every third of it
// while the task runs, and a lease that runs out (the claimer died) lets the owner run the task
// itself. The owner's job ends only when every task of the group has ended
// or gone, so a group job's end still means all of its tasks' ends are written.
import type { JobResult, JobData } from '../core/types.js';
import type { RedisClient } from './connection.js';

/** The job name (and `kind`) of a group job, on TASK_QUEUE. */
export const GROUP_JOB = 'grupo';

/**
 * The contract version a group job needs: a worker that knows only 1 gives it back (SPEC §9).
 * Sharing a group's tasks (below) needs none: only an owner that shares opens its group to
 * claims, so an older worker running a group never meets a claimed field.
 */
export const GROUP_CONTRACT_VERSION = 2;

/** Group job ids start with this, so an event about a job tells whether it was a group. */
export const GROUP_ID_PREFIX = 'g-';

/**
 * Published by the worker for tasks of a group that ended, at most every TELL_ENDS_MS and at the
 * group's end (an API then records them in one commit): on the stream of the API that queued the
 * group (addressed.ts), or on the task queue's events stream for a group of an older API.
 * Payload `{ tarefas: <task ids joined by ','> }`.
 */
export const TASK_ENDED_EVENT = 'censo:tarefas-fim';

/**
 * How long a group's ended tasks may wait to be told to their API (their fields say so at once, so
 * a task's own monitor shows its end at once; the batch's counts follow within this and one job).
 * A second, not 100 ms (issue 55): a school's return takes 100 ms or more, so each end was told,
 * read and recorded alone: an XREAD, an MGET, a commit and a drop a file. Told ten at a time, the
 * API records them in one commit.
 */
export const TELL_ENDS_MS = 1_000;

export interface GroupItem {
  /** The task's id (its field in the group's hash, its files' area). */
  readonly id: string;
  readonly data: JobData;
}

export interface GroupJobData {
  readonly kind: typeof GROUP_JOB;
  readonly tarefas: readonly GroupItem[];
}

/** What a finished group job returns: how many of its tasks it ran (their results are in the hash). */
export interface GroupSummary {
  readonly tarefas: number;
}

/** A task's state in its group, as read from its field. */
export type GroupItemState =
  | { readonly state: 'waiting' }
  | {
      readonly state: 'started';
      readonly startedAt: number;
      /** The worker that claimed it (an idle one sharing the group), and until when; absent when the group's own worker runs it. */
      readonly claim?: { readonly worker: string; readonly until: number };
    }
  | { readonly state: 'done'; readonly startedAt: number; readonly finishedAt: number; readonly result: JobResult }
  | { readonly state: 'stopped'; readonly startedAt: number; readonly finishedAt: number; readonly why: 'cancelado' | 'erro' };

export const WAITING_ITEM = '{}';

export function startedItem(startedAt: number): string {
  return JSON.stringify({ s: startedAt });
}

/** A task claimed by `worker` (BullMQ's worker id: its cancellations' channel), its lease until `until`. */
export function claimedItem(startedAt: number, worker: string, until: number): string {
  return JSON.stringify({ s: startedAt, o: worker, l: until });
}

export function finishedItem(
  startedAt: number,
  finishedAt: number,
  outcome: { result: JobResult } | { why: 'cancelado' | 'erro' },
): string {
  // `f` first: the scripts tell a finished field by its first bytes.
  return 'result' in outcome
    ? JSON.stringify({ f: finishedAt, s: startedAt, r: outcome.result })
    : JSON.stringify({ f: finishedAt, s: startedAt, w: outcome.why });
}

export function parseItem(raw: string): GroupItemState {
  const value = JSON.parse(raw) as { s?: number; f?: number; r?: JobResult; w?: 'cancelado' | 'erro'; o?: string; l?: number };
  if (value.f === undefined) {
    if (value.s === undefined) return { state: 'waiting' };
    if (typeof value.o === 'string' && typeof value.l === 'number') {
      return { state: 'started', startedAt: value.s, claim: { worker: value.o, until: value.l } };
    }
    return { state: 'started', startedAt: value.s };
  }
  const startedAt = value.s ?? value.f;
  if (value.r !== undefined) return { state: 'done', startedAt, finishedAt: value.f, result: value.r };
  return { state: 'stopped', startedAt, finishedAt: value.f, why: value.w === 'erro' ? 'erro' : 'cancelado' };
}

/** Redis keys of the groups on `queue` under `prefix` (one hash slot with a hash-tagged prefix, as the queue's own). */
export function groupKeys(prefix: string, queue: string) {
  return {
    /** The group's hash: one field a task. */
    group: (id: string) => `${prefix}:${queue}:grupo:${id}`,
    /** How many grouped tasks wait (`{}` fields): they count under MAX_QUEUED_TAREFAS like waiting jobs. */
    waiting: `${prefix}:${queue}:grupos:aguardando`,
    /** The queue's events stream (BullMQ's key), where TASK_ENDED_EVENT goes. */
    events: `${prefix}:${queue}:events`,
    /** How a group is shared: its tasks' order (`ids`, joined by ',') and how far claims reached from the back (`fim`). */
    share: (id: string) => `${prefix}:${queue}:partilha:${id}`,
    /** The groups that may still have tasks to claim, by the time they were queued. */
    open: `${prefix}:${queue}:grupos:abertos`,
    /** Workers whose last look found nothing to claim, by when: an owner starting a group wakes a few of them. */
    idle: `${prefix}:${queue}:grupos:ociosos`,
    /** What CLAIM builds a group's keys from (`<prefix>grupo:<id>`, `<prefix>partilha:<id>`). */
    keyPrefix: `${prefix}:${queue}:`,
  };
}

/**
 * What an owner starting a group sends an idle worker on that worker's own channel (the one its
 * cancellations come on, addressed.ts): no job id starts with '+'.
 */
export const HELP_MESSAGE = '+ajuda';

/** How many waiting tasks one claim takes: a few, so that a claim's round trip is shared, and the tail stays short. */
export const CLAIM_CHUNK = 3;

/** A group's share outlives any group job's run (a group job runs for minutes, not a day). */
export const SHARE_TTL_MS = 24 * 3_600_000;

/** How often an owner whose remaining tasks are claimed by others looks at them until they end. */
export const CLAIMED_POLL_MS = 250;

// A field's first five bytes tell a finished one (finishedItem writes `f` first).
const IS_FINISHED = `string.sub(v, 1, 5) == '{"f":'`;

// A claimed field's claimer and lease (claimedItem writes them in this form).
const CLAIMER = `string.match(v, '"o":"([^"]+)"')`;
const LEASE = `tonumber(string.match(v, '"l":(%d+)'))`;

/**
 * The API drops tasks from their group (their ends recorded, or cancelled, or deleted): what each
 * was (0 absent, 1 waiting, 2 started, 3 finished, 4 claimed by another worker), how many fields
 * the group has left, then for each claimed task its position (1-based) and its claimer, whom a
 * cancellation goes to. KEYS: group, waiting, share, open; ARGV[1] the group's id, then the tasks'
 * ids. Their fields read in one HMGET and dropped in one HDEL, whatever their number (issue 55: it
 * was a HGET and a HDEL a task). The group's last task takes its sharing with it.
 */
const DROP_ITEMS = `
local out = {}
local claimers = {}
local ids = {}
for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
local values = redis.call('HMGET', KEYS[1], unpack(ids))
local present = {}
local waiting = 0
for i = 1, #ids do
  local v = values[i]
  local was = 0
  if v then
    if ${IS_FINISHED} then was = 3 elseif v == '${WAITING_ITEM}' then was = 1 else
      local claimer = ${CLAIMER}
      if claimer then was = 4; claimers[#claimers + 1] = i; claimers[#claimers + 1] = claimer else was = 2 end
    end
    if was == 1 then waiting = waiting + 1 end
    present[#present + 1] = ids[i]
  end
  out[i] = was
end
if waiting > 0 then redis.call('DECRBY', KEYS[2], waiting) end
if #present > 0 then redis.call('HDEL', KEYS[1], unpack(present)) end
local left = redis.call('HLEN', KEYS[1])
if left == 0 then
  redis.call('DEL', KEYS[3])
  redis.call('ZREM', KEYS[4], ARGV[1])
end
out[#ids + 1] = left
for i = 1, #claimers do out[#out + 1] = claimers[i] end
return out`;

/**
 * The worker's one round trip a task: records the ends of the tasks it ran since its last call
 * (ARGV[7..], id and field pairs; a field gone meanwhile, its task cancelled or recorded, stays
 * gone), tells the API of the tasks ARGV[4] names (ids joined by ',': one TASK_ENDED_EVENT for
 * them all on KEYS[3]; '' tells none), then takes its next task ARGV[1] ('' for none): 1 run it,
 * 0 skip it (gone, or finished in an earlier attempt), 2 another worker's claim on it holds (the
 * owner waits for its end). A claim whose lease ran out (ARGV[6] is now) is taken over: its
 * claimer is gone. KEYS: group, waiting, and where ends are told: the stream of the API that
 * queued the group (addressed.ts), or the queue's events stream for a group of an older API;
 * ARGV[2] the next task's started field, ARGV[3] the stream's length, ARGV[5] how long the stream
 * lives after this entry (ms; '0' for the events stream).
 *
 * Its fields are read in one HMGET and written in one HSET (issue 55: a HEXISTS and a HSET for the
 * end, a HGET and a HSET for the next task, six commands a task with the script's own call; four now).
 */
const STEP = `
local fields = {}
for i = 7, #ARGV, 2 do fields[#fields + 1] = ARGV[i] end
if ARGV[1] ~= '' then fields[#fields + 1] = ARGV[1] end
local values = {}
if #fields > 0 then values = redis.call('HMGET', KEYS[1], unpack(fields)) end
local sets = {}
local k = 1
for i = 7, #ARGV, 2 do
  if values[k] then sets[#sets + 1] = ARGV[i]; sets[#sets + 1] = ARGV[i + 1] end
  k = k + 1
end
if ARGV[4] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', 'event', '${TASK_ENDED_EVENT}', 'tarefas', ARGV[4])
  if ARGV[5] ~= '0' then redis.call('PEXPIRE', KEYS[3], ARGV[5]) end
end
local run = 0
if ARGV[1] ~= '' then
  local v = values[k]
  if v and not (${IS_FINISHED}) then
    run = 1
    if v == '${WAITING_ITEM}' then
      redis.call('DECR', KEYS[2])
    else
      local lease = ${LEASE}
      if lease and lease > tonumber(ARGV[6]) then run = 2 end
    end
    if run == 1 then sets[#sets + 1] = ARGV[1]; sets[#sets + 1] = ARGV[2] end
  end
end
if #sets > 0 then redis.call('HSET', KEYS[1], unpack(sets)) end
return run`;

/**
 * The owner opens its group to claims when it starts it: its tasks' order on the share (`fim`, how
 * far claims reached, is kept on a retry) and its place among the open groups; then it wakes up to
 * ARGV[7] idle workers, each with HELP_MESSAGE on its own channel (ARGV[5] followed by its id),
 * the longest idle first. Nothing is broadcast: a worker hears of a group only when it is woken
 * to share it. A popped worker nobody listens for (gone) wakes the next one. (On a Redis Cluster
 * PUBLISH counts only the subscribers of the node it ran on, so a worker listening on another node
 * counts as gone and one more is woken: a look more, never a task run twice.) KEYS: share, open,
 * idle; ARGV: the ids joined by ',', the share's lifetime (ms), the group's id, now, the channels'
 * prefix, the owner's id ('' unknown: it is not idle any more), how many to wake. One round trip a group.
 */
const OPEN = `
redis.call('HSET', KEYS[1], 'ids', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
if ARGV[6] ~= '' then redis.call('ZREM', KEYS[3], ARGV[6]) end
local want = tonumber(ARGV[7])
local woken = 0
local tries = 0
while woken < want and tries < want + 8 do
  local popped = redis.call('ZPOPMIN', KEYS[3])
  if #popped == 0 then break end
  tries = tries + 1
  if redis.call('PUBLISH', ARGV[5] .. popped[1], '${HELP_MESSAGE}') > 0 then woken = woken + 1 end
end
return woken`;

/**
 * An idle worker claims up to ARGV[3] waiting tasks from the back of the oldest open group that
 * has any: `{ group id, task ids... }`, or empty when no group has one, and the worker is then
 * counted idle. KEYS: open, waiting, idle; ARGV[1] the prefix of the groups' keys, ARGV[2] the
 * claimed field (claimedItem), ARGV[3] how many, ARGV[4] the worker's id, ARGV[5] now. Only a group
 * whose job a worker holds (its lock) is shared. Claims go down from the share's `fim`; the first
 * field that is neither waiting nor gone is the owner's (it runs from the front), so the two ends
 * have met and the group is closed to claims (its share and its place among the open groups go).
 * At most 8 groups are looked at a call.
 */
const CLAIM = `
local groups = redis.call('ZRANGE', KEYS[1], 0, 7)
local chunk = tonumber(ARGV[3])
for _, g in ipairs(groups) do
  local shareKey = ARGV[1] .. 'partilha:' .. g
  local share = redis.call('HMGET', shareKey, 'ids', 'fim')
  local closed = true
  local took = {}
  -- Only a running group is shared: one whose job went back to wait (its worker died) goes whole
  -- to the next worker, and one whose job is gone (completed, removed) is closed.
  local running = share[1] and redis.call('EXISTS', ARGV[1] .. g .. ':lock') == 1
  if share[1] and not running and redis.call('EXISTS', ARGV[1] .. g) == 1 then closed = false end
  if running then
    local ids = {}
    for id in string.gmatch(share[1], '[^,]+') do ids[#ids + 1] = id end
    local fim = tonumber(share[2]) or #ids
    if fim >= 1 then
      closed = false
      local candidates = {}
      for j = fim, math.max(1, fim - chunk + 1), -1 do candidates[#candidates + 1] = ids[j] end
      local groupKey = ARGV[1] .. 'grupo:' .. g
      local values = redis.call('HMGET', groupKey, unpack(candidates))
      local sets = {}
      for i = 1, #candidates do
        local v = values[i]
        if v == '${WAITING_ITEM}' then
          took[#took + 1] = candidates[i]
          sets[#sets + 1] = candidates[i]; sets[#sets + 1] = ARGV[2]
          fim = fim - 1
        elseif not v then
          fim = fim - 1
        else
          closed = true
          break
        end
      end
      if fim < 1 then closed = true end
      if #took > 0 then
        redis.call('HSET', groupKey, unpack(sets))
        redis.call('DECRBY', KEYS[2], #took)
      end
      if not closed then redis.call('HSET', shareKey, 'fim', fim) end
    end
  end
  if closed then
    redis.call('DEL', shareKey)
    redis.call('ZREM', KEYS[1], g)
  end
  if #took > 0 then
    table.insert(took, 1, g)
    return took
  end
end
-- Nothing to claim: this worker is idle until a group's owner wakes it (or its queue gives it a job).
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[4])
return {}`;

/**
 * A claimer renews its claims (ARGV[2] '0'), or gives them back as waiting (ARGV[2] '1': it is
 * closing): each field ARGV[3..] (id and new field pairs) is written only while its claim is still
 * this worker's (it holds ARGV[1], the claimer's `"o":"<worker>"`) and its task not finished. One
 * flag a task: whether the claim still held. KEYS: group, waiting.
 */
const RENEW = `
local ids = {}
for i = 3, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local values = redis.call('HMGET', KEYS[1], unpack(ids))
local out = {}
local sets = {}
for i = 1, #ids do
  local v = values[i]
  out[i] = 0
  if v and not (${IS_FINISHED}) and string.find(v, ARGV[1], 1, true) then
    out[i] = 1
    sets[#sets + 1] = ids[i]; sets[#sets + 1] = ARGV[2 + 2 * i]
  end
end
if #sets > 0 then
  redis.call('HSET', KEYS[1], unpack(sets))
  if ARGV[2] == '1' then redis.call('INCRBY', KEYS[2], #sets / 2) end
end
return out`;

type ScriptClient = RedisClient & {
  censoStep(
    group: string,
    waiting: string,
    tellTo: string,
    next: string,
    startedField: string,
    maxLen: number,
    tell: string,
    tellTtlMs: number,
    now: number,
    ...ended: string[]
  ): Promise<number>;
  censoDropItems(
    group: string,
    waiting: string,
    share: string,
    open: string,
    grupo: string,
    ...ids: string[]
  ): Promise<Array<number | string>>;
  censoOpen(
    share: string,
    open: string,
    idle: string,
    ids: string,
    ttlMs: number,
    grupo: string,
    now: number,
    channels: string,
    owner: string,
    wake: number,
  ): Promise<number>;
  censoClaim(
    open: string,
    waiting: string,
    idle: string,
    keyPrefix: string,
    claimedField: string,
    chunk: number,
    worker: string,
    now: number,
  ): Promise<string[]>;
  censoRenew(group: string, waiting: string, mine: string, release: '0' | '1', ...pairs: string[]): Promise<number[]>;
};

const defined = new WeakSet<RedisClient>();

/** The group scripts on `client` (EVALSHA, loaded once per connection by ioredis). */
export function groupScripts(client: RedisClient): ScriptClient {
  if (!defined.has(client)) {
    client.defineCommand('censoStep', { numberOfKeys: 3, lua: STEP });
    client.defineCommand('censoDropItems', { numberOfKeys: 4, lua: DROP_ITEMS });
    client.defineCommand('censoOpen', { numberOfKeys: 3, lua: OPEN });
    client.defineCommand('censoClaim', { numberOfKeys: 3, lua: CLAIM });
    client.defineCommand('censoRenew', { numberOfKeys: 2, lua: RENEW });
    defined.add(client);
  }
  return client as ScriptClient;
}

/** What a step said of the next task: run it, skip it (gone or finished), or wait for another worker's claim on it. */
export const STEP_SKIP = 0;
export const STEP_RUN = 1;
export const STEP_CLAIMED = 2;

/** What CLAIM's field test looks for: the claim is this worker's. */
export function claimMark(worker: string): string {
  return `"o":${JSON.stringify(worker)}`;
}

/** What dropping tasks from their group found. */
export interface Dropped {
  /** What each task was, in the order given ('claimed': started on a worker that shares the group). */
  readonly was: ReadonlyArray<'absent' | 'waiting' | 'started' | 'finished' | 'claimed'>;
  /** No task left in the group: its job can go. */
  readonly empty: boolean;
  /** The claimer of each claimed task, by the task's position in the order given. */
  readonly claimers: ReadonlyMap<number, string>;
}

const WAS = ['absent', 'waiting', 'started', 'finished', 'claimed'] as const;

/** DROP_ITEMS's reply for `count` tasks. */
export function droppedOf(reply: ReadonlyArray<number | string>, count: number): Dropped {
  const claimers = new Map<number, string>();
  for (let i = count + 1; i + 1 < reply.length; i += 2) claimers.set(Number(reply[i]) - 1, String(reply[i + 1]));
  return {
    was: reply.slice(0, count).map((was) => WAS[Number(was)] ?? 'absent'),
    empty: Number(reply[count]) === 0,
    claimers,
  };
}
