// Idempotency-Key records (SPEC §7.2): a key is reserved while its request is received, and
// remembers what the request made (its task or tasks, or its batch) for IDEMPOTENCY_TTL_MS, in the
// principal's own space. The request's tasks take over the reservation in the commit that creates
// them (service.ts), so a key never names half a request.
import { createHash, randomBytes } from 'node:crypto';
import type { Dono } from './model.js';
import { keys, type TarefaStore } from './store.js';

/** Idempotency keys are remembered this long (SPEC §7.2). */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

export interface IdempotencyDone {
  readonly digest: string;
  readonly tarefa?: string;
  /** Every task of a request that sent several returns (`tarefa` is the first). */
  readonly tarefas?: readonly string[];
  readonly lote?: string;
}

export type IdempotencyState =
  { readonly state: 'none' } | { readonly state: 'receiving' } | ({ readonly state: 'done' } & IdempotencyDone);

/** A reservation held while its request is received (SPEC §7.2: a second one gets 409 meanwhile). */
export interface IdempotencyReservation {
  readonly key: string;
  readonly value: string;
}

export class IdempotencyRecords {
  readonly #store: TarefaStore;
  readonly #uploadTimeoutMs: number;

  /** A reservation outlives the longest upload (UPLOAD_TIMEOUT_MS) by a minute. */
  constructor(store: TarefaStore, uploadTimeoutMs: number) {
    this.#store = store;
    this.#uploadTimeoutMs = uploadTimeoutMs;
  }

  /** Where a principal's Idempotency-Key is remembered: its own space (SPEC §7.2), another's same key is another key. */
  key(scope: string, dono: Dono, key: string): string {
    return keys.idem(scope, createHash('sha256').update(`${dono}\n${key}`, 'utf8').digest('hex'));
  }

  async read(storeKey: string): Promise<IdempotencyState> {
    const raw = await this.#store.get(storeKey);
    if (raw === null) return { state: 'none' };
    const value = JSON.parse(raw) as { recebendo?: string } & IdempotencyDone;
    if (value.recebendo) return { state: 'receiving' };
    return {
      state: 'done',
      digest: value.digest,
      ...(value.tarefa ? { tarefa: value.tarefa } : {}),
      ...(value.tarefas ? { tarefas: value.tarefas } : {}),
      ...(value.lote ? { lote: value.lote } : {}),
    };
  }

  /** Holds the key while the request is received; null when another request holds or used it meanwhile. */
  async reserve(storeKey: string): Promise<IdempotencyReservation | null> {
    const value = JSON.stringify({ recebendo: randomBytes(12).toString('base64url') });
    const ttlMs = this.#uploadTimeoutMs + 60_000;
    const ok = await this.#store.commit([{ key: storeKey, value: null }], [{ op: 'set', key: storeKey, value, ttlMs }]);
    return ok ? { key: storeKey, value } : null;
  }

  async release(reservation: IdempotencyReservation): Promise<void> {
    await this.#store.commit([{ key: reservation.key, value: reservation.value }], [{ op: 'del', key: reservation.key }]);
  }
}
