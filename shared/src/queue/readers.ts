// The handshake between APIs and workers on the contract versions every live worker reads (SPEC
// §12, issue 47). An API queues group jobs only when every worker connected to the tasks' queue
// reads them; and it gives a job that no live worker reads (a rollback left it behind) the
// contract of its own jobs, when the live workers read that.
//
// Each worker names its Redis connections (BullMQ's worker `name`: CLIENT SETNAME
// `<prefix>:<queue in base64>:w:<name>`), so `Queue.getWorkers()` lists every connected worker,
// older ones included (those are unnamed, or named without an announcement). Each worker also
// announces, in a sorted set beside the queue's keys, `<name>|<contract>` scored with when the
// announcement lapses: a worker killed without a goodbye stops counting once that passes, and its
// connection is gone from the list anyway. The connection list says who is there; the set says
// what each reads. Neither alone would do: a count of announcements cannot tell a dead worker's
// lingering one from an older worker's silence.
import { randomUUID } from 'node:crypto';
import type { RedisClient } from './connection.js';

/** How long an announcement counts without being renewed. */
export const ANNOUNCE_TTL_MS = 60_000;

/** How often a worker renews it: a third of its life, so one lost renewal does not drop it (one command every 20 s idle). */
export const announceEveryMs = (ttlMs: number): number => Math.max(100, Math.floor(ttlMs / 3));

/** Redis keys of the handshake on `queue` under `prefix` (one hash slot with the queue's own keys). */
export function readerKeys(prefix: string, queue: string) {
  return {
    /** Sorted set: `<worker name>|<contract>`, scored with the time (ms) the announcement lapses. */
    readers: `${prefix}:${queue}:leitores`,
    /** Sorted set: ids of jobs a worker gave back for a newer one, scored with when (the API's rescue looks at these). */
    handedBack: `${prefix}:${queue}:devolvidos`,
  };
}

/** How long a handed-back job id is remembered at most (its job is kept no longer). */
export const HANDED_BACK_TTL_MS = 7 * 24 * 3_600_000;

/** A worker's name for its connections: unique per process, safe in CLIENT SETNAME (no spaces). */
export function newWorkerName(): string {
  return `censo-${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** Announces (or renews) that worker `name` reads contracts up to `version`, for `ttlMs`. */
export async function announceReader(client: RedisClient, key: string, name: string, version: number, ttlMs: number): Promise<void> {
  const now = Date.now();
  await client
    .multi()
    .zremrangebyscore(key, '-inf', now)
    .zadd(key, now + ttlMs, `${name}|${version}`)
    .pexpire(key, ttlMs)
    .exec();
}

/** A worker that closes in order withdraws at once rather than counting until its announcement lapses. */
export async function withdrawReader(client: RedisClient, key: string, name: string, version: number): Promise<void> {
  await client.zrem(key, `${name}|${version}`);
}

/** The live announcements: worker name → the newest contract it reads. */
export async function liveReaders(client: RedisClient, key: string): Promise<Map<string, number>> {
  const members = await client.zrangebyscore(key, Date.now(), '+inf');
  const out = new Map<string, number>();
  for (const member of members) {
    const at = member.lastIndexOf('|');
    const version = Number(member.slice(at + 1));
    if (at > 0 && Number.isSafeInteger(version)) out.set(member.slice(0, at), Math.max(version, out.get(member.slice(0, at)) ?? 0));
  }
  return out;
}

/** An entry of BullMQ's worker list (CLIENT LIST): `rawname` is the connection's name (`name` the queue's). */
export interface ConnectedWorker {
  readonly rawname?: string;
}

/** A connected worker's name: null for an unnamed one (an older version). */
export function workerNameOf(client: ConnectedWorker): string | null {
  const at = client.rawname?.indexOf(':w:') ?? -1;
  return at < 0 ? null : client.rawname!.slice(at + 3);
}

/** What the live workers of a queue read. */
export interface Readers {
  /** Workers connected to the queue now. */
  readonly workers: number;
  /** The contract each connected worker reads; 1 for one that announced nothing (an older version: it may read less than anything we send). */
  readonly versions: readonly number[];
}

export function readersOf(connected: readonly ConnectedWorker[], announced: ReadonlyMap<string, number>): Readers {
  const versions = connected.map((client) => {
    const name = workerNameOf(client);
    return (name === null ? undefined : announced.get(name)) ?? 1;
  });
  return { workers: versions.length, versions };
}

/**
 * Whether group jobs of contract `groupContract` may be queued now, and why (the operator's log).
 * Every connected worker must read them. With none connected, a group is queued only when it needs
 * no more than a job of the core would (`coreContract`): whichever worker comes then reads both
 * or neither, and the rescue relabels what it cannot read.
 */
export function groupsAllowed(readers: Readers, groupContract: number, coreContract: number): { on: boolean; motivo: string } {
  if (readers.workers === 0) {
    return groupContract <= coreContract
      ? { on: true, motivo: 'nenhum worker conectado; um job em grupo não pede mais que um job do núcleo' }
      : { on: false, motivo: 'nenhum worker conectado' };
  }
  const older = readers.versions.filter((version) => version < groupContract).length;
  return older === 0
    ? { on: true, motivo: `todos os ${readers.workers} workers conectados leem o contrato ${groupContract}` }
    : { on: false, motivo: `${older} de ${readers.workers} workers conectados não anunciam o contrato ${groupContract}` };
}
