// Messages addressed to the one process that needs them (issue 55). The queue's events stream is
// broadcast: every reader reads every job's events, so each worker reading it for cancellations,
// and each API for its jobs' ends, cost every process more with each host added (CLUSTER.md, the
// scale profile: XREAD per file grew from 3.0 to 8.7 between 4 and 16 worker hosts). Instead:
//
// - a cancellation goes to the worker holding the job, over a Pub/Sub channel of that worker's own
//   (its BullMQ id, read from the job's lock token), and only that worker reads it;
// - a job's end goes to the API that queued it, on a stream of that API's own named in the job's
//   data (`fim`), and only that API reads it.
//
// Workers of contract ADDRESSED_CONTRACT_VERSION and later do both. An API still reaches older
// workers the old way during a rolling upgrade: a cancellation no subscriber took goes on the
// events stream too, and while the handshake (readers.ts) shows a connected worker older than
// that, the API reads the events stream as before.
import { randomUUID } from 'node:crypto';
import type { RedisClient } from './connection.js';
import type { QueuedJobData } from './contract.js';
import { TASK_ENDED_EVENT } from './task-groups.js';

/** The contract from which a worker hears cancellations on its own channel and tells ends to the API named in the job. */
export const ADDRESSED_CONTRACT_VERSION = 4;

/** An API's ends stream stays this long after its last entry: a stream of an API that is gone goes by itself. */
export const ENDS_TTL_MS = 3_600_000;

/** Approximate length of an API's ends stream: entries it has read are not needed again. */
export const ENDS_MAX_LEN = 10_000;

/** What an API or a worker id may be: it becomes part of a key and a channel, and job data comes from Redis. */
const ADDRESS = /^[A-Za-z0-9_-]{1,64}$/;

/** An API process's address: unique per process, so a restarted API starts a stream of its own. */
export function newApiAddress(): string {
  return `api-${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** The stream where the ends of the jobs API `api` queued go (one hash slot with the queue's keys under a hash-tagged prefix). */
export function endsStream(prefix: string, api: string): string {
  return `${prefix}:fim:${api}`;
}

/** The channel where the worker whose BullMQ id is `worker` hears the cancellations of the jobs it holds on `queue`. */
export function cancelChannel(prefix: string, queue: string, worker: string): string {
  return `${prefix}:${queue}:cancelar:${worker}`;
}

/** The key of a job's lock (BullMQ's): its value is the token of the worker holding it. */
export function lockKey(prefix: string, queue: string, jobId: string): string {
  return `${prefix}:${queue}:${jobId}:lock`;
}

/** The BullMQ id of the worker holding a lock (its token is `<worker id>:<n>`); null for a token of another form. */
export function workerOfToken(token: string): string | null {
  const at = token.lastIndexOf(':');
  const worker = at > 0 ? token.slice(0, at) : '';
  return ADDRESS.test(worker) ? worker : null;
}

/** The API a queued job tells its end to; null for a job from an API before ADDRESSED_CONTRACT_VERSION (or a bad value). */
export function endsTo(data: QueuedJobData): string | null {
  const api = (data as { fim?: unknown } | null)?.fim;
  return typeof api === 'string' && ADDRESS.test(api) ? api : null;
}

/** A job's end as an API reads it from its stream (the fields of BullMQ's own events, so one handler reads both). */
export type JobEnd =
  | { readonly event: 'completed'; readonly jobId: string; readonly returnvalue: string }
  | { readonly event: 'failed'; readonly jobId: string; readonly failedReason: string }
  | { readonly event: typeof TASK_ENDED_EVENT; readonly tarefas: string };

/** Appends one end to API `api`'s stream: one round trip (the stream's trim and its lifetime with it). */
export async function tellEnd(client: RedisClient, stream: string, end: JobEnd): Promise<void> {
  const fields = Object.entries(end).flat();
  await client
    .multi()
    .xadd(stream, 'MAXLEN', '~', ENDS_MAX_LEN, '*', ...fields)
    .pexpire(stream, ENDS_TTL_MS)
    .exec();
}

/** An entry of the ends stream read back; null for one of another form (the stream is Redis's, not ours alone). */
export function parseEnd(flat: readonly string[]): JobEnd | null {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  const { event, jobId, returnvalue, failedReason, tarefas } = fields;
  if (event === 'completed' && jobId && returnvalue !== undefined) return { event, jobId, returnvalue };
  if (event === 'failed' && jobId) return { event, jobId, failedReason: failedReason ?? '' };
  if (event === TASK_ENDED_EVENT && tarefas) return { event, tarefas };
  return null;
}
