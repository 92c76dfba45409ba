// The store of task, batch, idempotency and webhook records (SPEC §7.5): one port, two adapters.
// Embedded mode keeps them in this process (store-memory.ts, forgotten on restart); queue mode
// keeps them in Redis under the queue prefix (store-redis.ts), so any API replica answers for any
// id and a restart loses nothing.
//
// The port is deliberately small: text values by key, sorted sets, and one atomic `commit` that
// applies writes only if the guarded keys still hold what was read. Every rule (a batch's counts,
// when it ends, who finishes a task) is written once, in service.ts, as read-compute-commit, and
// both adapters give it the same guarantees: of two replicas finishing one task, exactly one
// commit succeeds.
import { createHash } from 'node:crypto';
import type { Dono } from './model.js';

export interface Guard {
  readonly key: string;
  /** What the key must still hold (null: absent) for the commit to apply. */
  readonly value: string | null;
}

export type Write =
  | { readonly op: 'set'; readonly key: string; readonly value: string; readonly ttlMs?: number }
  | { readonly op: 'del'; readonly key: string }
  | { readonly op: 'zadd'; readonly key: string; readonly member: string; readonly score: number }
  | { readonly op: 'zrem'; readonly key: string; readonly member: string };

export interface Scored {
  readonly member: string;
  readonly score: number;
}

export interface RangeQuery {
  /** Scores strictly above this (keyset cursors). */
  readonly after?: number;
  /** Scores from this, inclusive (a cursor whose score others may share: the caller skips the ties it has seen). */
  readonly from?: number;
  /** Scores up to this, inclusive. */
  readonly upTo?: number;
  readonly limit: number;
}

export interface TarefaStore {
  readonly kind: 'memory' | 'redis';
  get(key: string): Promise<string | null>;
  getMany(keys: readonly string[]): Promise<(string | null)[]>;
  /** Applies every write at once if every guard holds; false (nothing written) otherwise. */
  commit(guards: readonly Guard[], writes: readonly Write[]): Promise<boolean>;
  /** Members of a sorted set by ascending score (then member). */
  range(key: string, query: RangeQuery): Promise<Scored[]>;
  count(key: string): Promise<number>;
}

/** The keys, relative to the store's namespace (the adapter adds the queue prefix). */
export const keys = {
  tarefa: (id: string) => `tarefa:${id}`,
  lote: (id: string) => `lote:${id}`,
  /** A batch's tasks by position (score: seq). */
  loteTarefas: (id: string) => `lote:${id}:tarefas`,
  /** Unfinished tasks (score: creation time): what the reconciler looks at. */
  pendentes: 'pendentes',
  /** What expires when (score: epoch ms): `t:<id>` tasks of their own, `l:<id>` batches. */
  expiram: 'expiram',
  /** Open batches by their last file (score: epoch ms), for the 24 h idle close. */
  abertos: 'abertos',
  /** Deleted batches whose tasks are still being removed (score: when). */
  apagar: 'apagar',
  idem: (scope: string, digest: string) => `idem:${scope}:${digest}`,
  /** A principal's batches, newest first (score: minus the creation time), for GET /api/lotes. */
  lotesDe: (dono: string) => `dono:${dono}:lotes`,
  /** How many open batches a principal holds (a number, guarded: MAX_LOTES_ABERTOS is strict). */
  abertosDe: (dono: string) => `dono:${dono}:abertos`,
  /** A principal's batch creations per minute over the last hour (JSON, guarded: MAX_LOTES_POR_HORA). */
  criadosDe: (dono: string) => `dono:${dono}:criados`,
  /** Open batches by when they must close at the latest (score: creation + LOTE_MAX_HOURS). */
  limite: 'limite',
  webhook: (id: string) => `webhook:${id}`,
  /** Webhook messages to send (score: when the next attempt is due). */
  webhooksDue: 'webhooks',
} as const;

/** A principal as part of a store key: fixed length, whatever a provider's `sub` holds. */
export const donoKey = (dono: Dono): string => createHash('sha256').update(dono, 'utf8').digest('hex').slice(0, 32);
