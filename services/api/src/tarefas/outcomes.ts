// What creating tasks or a batch answers when it cannot: the request's Idempotency-Key already
// names another request (with what that one made), the batch is unknown or closed, or the
// principal holds too many open batches. The routes turn each into its SPEC §7 status.
import type { IdempotencyState } from './idempotency.js';
import type { TarefaRecord } from './model.js';

export type NewLoteOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly why: 'idempotencia'; readonly existing: IdempotencyState }
  | { readonly ok: false; readonly why: 'muitos-abertos' };

export type NewTarefaOutcome =
  | { readonly ok: true; readonly records: TarefaRecord[] }
  | { readonly ok: false; readonly why: 'lote-nao-encontrado' | 'lote-fechado' | 'idempotencia' };
