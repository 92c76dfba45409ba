// Several asynchronous tasks carried by one job (issue 35). A state's burst sends its returns 50 to
// a request; one BullMQ job, one hand-off and one set of queue events per task cost more than the
// job itself for a school's small return (BENCHMARKS.md "the per-task floor"). A group job carries
// a request's tasks; each task keeps its own state, as one field of the group's hash in Redis, so
// the API answers, cancels, times out and records each task exactly as it does a task of its own.
//
// The field of a task, its whole life in the group:
//   `{}`                      waiting (written before the job is queued)
//   `{"s":t}`                 its item runs since t (or ran, in an attempt that did not finish)
//   `{"f":t,"s":t0,"r":res}`  finished with the job result `res`
//   `{"f":t,"s":t0,"w":why}`  stopped without a result: `cancelado` (its upload was gone) or `erro`
//   absent                    gone: cancelled or recorded (the task's job is then "missing")
// A field once gone is never written again: the worker's writes only replace a field that exists.
import type { JobResult, JobData } from '../core/types.js';
import type { RedisClient } from './connection.js';

/** The job name (and `kind`) of a group job, on TASK_QUEUE. */
export const GROUP_JOB = 'grupo';

/** The contract version a group job needs: a worker that knows only 1 gives it back (SPEC §9). */
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
  | { readonly state: 'started'; readonly startedAt: number }
  | { readonly state: 'done'; readonly startedAt: number; readonly finishedAt: number; readonly result: JobResult }
  | { readonly state: 'stopped'; readonly startedAt: number; readonly finishedAt: number; readonly why: 'cancelado' | 'erro' };

export const WAITING_ITEM = '{}';

export function startedItem(startedAt: number): string {
  return JSON.stringify({ s: startedAt });
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
  const value = JSON.parse(raw) as { s?: number; f?: number; r?: JobResult; w?: 'cancelado' | 'erro' };
  if (value.f === undefined) return value.s === undefined ? { state: 'waiting' } : { state: 'started', startedAt: value.s };
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
  };
}

// A field's first five bytes tell a finished one (finishedItem writes `f` first).
const IS_FINISHED = `string.sub(v, 1, 5) == '{"f":'`;

/**
 * The API drops tasks from their group (their ends recorded, or cancelled, or deleted): what each
 * was (0 absent, 1 waiting, 2 started, 3 finished), then how many fields the group has left.
 * KEYS: group, waiting; ARGV: the tasks' ids. Their fields read in one HMGET and dropped in one
 * HDEL, whatever their number (issue 55: it was a HGET and a HDEL a task).
 */
const DROP_ITEMS = `
local out = {}
local values = redis.call('HMGET', KEYS[1], unpack(ARGV))
local present = {}
local waiting = 0
for i = 1, #ARGV do
  local v = values[i]
  local was = 0
  if v then
    if ${IS_FINISHED} then was = 3 elseif v == '${WAITING_ITEM}' then was = 1 else was = 2 end
    if was == 1 then waiting = waiting + 1 end
    present[#present + 1] = ARGV[i]
  end
  out[i] = was
end
if waiting > 0 then redis.call('DECRBY', KEYS[2], waiting) end
if #present > 0 then redis.call('HDEL', KEYS[1], unpack(present)) end
out[#ARGV + 1] = redis.call('HLEN', KEYS[1])
return out`;

/**
 * The worker's one round trip a task: records the ends of the tasks it ran since its last call
 * (ARGV[6..], id and field pairs; a field gone meanwhile, its task cancelled or recorded, stays
 * gone), tells the API of the tasks ARGV[4] names (ids joined by ',': one TASK_ENDED_EVENT for
 * them all on KEYS[3]; '' tells none), then takes its next task ARGV[1] ('' for none): 1 run it,
 * 0 skip it (gone, or finished in an earlier attempt). KEYS: group, waiting, and where ends are
 * told: the stream of the API that queued the group (addressed.ts), or the queue's events stream
 * for a group of an older API; ARGV[2] the next task's started field, ARGV[3] the stream's
 * length, ARGV[5] how long the stream lives after this entry (ms; '0' for the events stream).
 *
 * Its fields are read in one HMGET and written in one HSET (issue 55: a HEXISTS and a HSET for the
 * end, a HGET and a HSET for the next task, six commands a task with the script's own call; four now).
 */
const STEP = `
local fields = {}
for i = 6, #ARGV, 2 do fields[#fields + 1] = ARGV[i] end
if ARGV[1] ~= '' then fields[#fields + 1] = ARGV[1] end
local values = {}
if #fields > 0 then values = redis.call('HMGET', KEYS[1], unpack(fields)) end
local sets = {}
local k = 1
for i = 6, #ARGV, 2 do
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
    if v == '${WAITING_ITEM}' then redis.call('DECR', KEYS[2]) end
    sets[#sets + 1] = ARGV[1]; sets[#sets + 1] = ARGV[2]
    run = 1
  end
end
if #sets > 0 then redis.call('HSET', KEYS[1], unpack(sets)) end
return run`;

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
    ...ended: string[]
  ): Promise<number>;
  censoDropItems(group: string, waiting: string, ...ids: string[]): Promise<number[]>;
};

const defined = new WeakSet<RedisClient>();

/** The group scripts on `client` (EVALSHA, loaded once per connection by ioredis). */
export function groupScripts(client: RedisClient): ScriptClient {
  if (!defined.has(client)) {
    client.defineCommand('censoStep', { numberOfKeys: 3, lua: STEP });
    client.defineCommand('censoDropItems', { numberOfKeys: 2, lua: DROP_ITEMS });
    defined.add(client);
  }
  return client as ScriptClient;
}

/** What dropping tasks from their group found. */
export interface Dropped {
  /** What each task was, in the order given. */
  readonly was: ReadonlyArray<'absent' | 'waiting' | 'started' | 'finished'>;
  /** No task left in the group: its job can go. */
  readonly empty: boolean;
}

const WAS = ['absent', 'waiting', 'started', 'finished'] as const;

export function droppedOf(reply: readonly number[]): Dropped {
  return { was: reply.slice(0, -1).map((was) => WAS[was] ?? 'absent'), empty: reply.at(-1) === 0 };
}
