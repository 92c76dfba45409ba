// What the listings read (SPEC §7.3): a principal's batches newest first, a batch's tasks in
// creation order (keyset pages, or all of them for the combined answers), and how many of a
// batch's tasks run now. Reads only: nothing here commits.
import type { TaskExecution } from './execution.js';
import { isFinal, type Dono, type EstadoTarefa, type LoteRecord, type TarefaAgora, type TarefaRecord } from './model.js';
import { donoKey, keys, type TarefaStore } from './store.js';

/** A page of a principal's batches, newest first (GET /api/lotes). */
export interface LotesListing {
  readonly lotes: LoteRecord[];
  /** Where the next page starts: the last batch's position. */
  readonly next: LotesCursor | null;
}

export interface LotesCursor {
  readonly score: number;
  readonly id: string;
}

export interface TarefasListing {
  readonly tarefas: TarefaAgora[];
  readonly next: number | null;
}

export class Listings {
  readonly #store: TarefaStore;
  readonly #execution: TaskExecution;

  constructor(store: TarefaStore, execution: TaskExecution) {
    this.#store = store;
    this.#execution = execution;
  }

  /** A principal's batches, newest first, after `cursor` (keyset; creation times may tie, ids break them). */
  async listLotes(dono: Dono, cursor: LotesCursor | null, limit: number): Promise<LotesListing> {
    const key = keys.lotesDe(donoKey(dono));
    const seen = (entry: { score: number; member: string }) =>
      cursor !== null && (entry.score < cursor.score || (entry.score === cursor.score && entry.member <= cursor.id));
    // Entries that tie with the cursor's score and were already listed are skipped; ask for enough
    // beyond them (ties are batches created in the same millisecond: a handful at most).
    const fetch = async (extra: number) => {
      const fetched = await this.#store.range(key, { ...(cursor ? { from: cursor.score } : {}), limit: limit + 1 + extra });
      return { page: fetched.filter((entry) => !seen(entry)), all: fetched.length < limit + 1 + extra };
    };
    let extra = 16;
    let { page, all } = await fetch(extra);
    while (page.length <= limit && !all) ({ page, all } = await fetch((extra *= 4)));
    const chosen = page.slice(0, limit);
    const raws = await this.#store.getMany(chosen.map((entry) => keys.lote(entry.member)));
    const lotes = raws.flatMap((raw) => (raw === null ? [] : [JSON.parse(raw) as LoteRecord]));
    const last = chosen[chosen.length - 1];
    return { lotes, next: page.length > limit && last ? { score: last.score, id: last.member } : null };
  }

  /** How many of the batch's unfinished tasks are running now. */
  async processando(loteId: string): Promise<number> {
    return (await this.processandoPorLote()).get(loteId) ?? 0;
  }

  /** Unfinished tasks running now, counted by batch (one look at the executor for a whole listing). */
  async processandoPorLote(): Promise<Map<string, number>> {
    const running = [...(await this.#execution.running()).keys()];
    const records = (await this.#store.getMany(running.map(keys.tarefa))).flatMap((raw) =>
      raw === null ? [] : [JSON.parse(raw) as TarefaRecord],
    );
    const counts = new Map<string, number>();
    for (const record of records) {
      if (record.lote !== null && record.estado === 'aguardando') counts.set(record.lote, (counts.get(record.lote) ?? 0) + 1);
    }
    return counts;
  }

  /** A batch's tasks in creation order after position `after`, `estado` only if given (keyset, SPEC §7.3). */
  async listLote(loteId: string, options: { after: number; limit: number; estado: EstadoTarefa | null }): Promise<TarefasListing> {
    const running = await this.#execution.running();
    const found: TarefaAgora[] = [];
    let cursor = options.after;
    // Bounded work per request: with a filter, a page may come back shorter, with a cursor to go on.
    for (let scanned = 0; found.length < options.limit && scanned < 5_000;) {
      const page = await this.#store.range(keys.loteTarefas(loteId), { after: cursor, limit: 200 });
      if (page.length === 0) return { tarefas: found, next: null };
      const raws = await this.#store.getMany(page.map((entry) => keys.tarefa(entry.member)));
      for (let i = 0; i < page.length && found.length < options.limit; i++) {
        cursor = page[i]!.score;
        scanned++;
        const raw = raws[i];
        if (!raw) continue;
        const record = JSON.parse(raw) as TarefaRecord;
        const started = running.get(record.id);
        const agora: TarefaAgora = isFinal(record.estado)
          ? { record, estado: record.estado, iniciadaEm: record.iniciadaEm }
          : started !== undefined
            ? { record, estado: 'processando', iniciadaEm: started }
            : { record, estado: 'aguardando', iniciadaEm: null };
        if (options.estado === null || agora.estado === options.estado) found.push(agora);
      }
    }
    const more = await this.#store.range(keys.loteTarefas(loteId), { after: cursor, limit: 1 });
    return { tarefas: found, next: more.length > 0 ? cursor : null };
  }

  /** The batch's tasks in creation order, page by page (for the combined divergences). */
  async *loteTarefas(loteId: string): AsyncGenerator<TarefaRecord> {
    let after = -Infinity;
    for (;;) {
      const page = await this.#store.range(keys.loteTarefas(loteId), { after, limit: 100 });
      if (page.length === 0) return;
      const raws = await this.#store.getMany(page.map((entry) => keys.tarefa(entry.member)));
      for (const raw of raws) if (raw !== null) yield JSON.parse(raw) as TarefaRecord;
      after = page[page.length - 1]!.score;
    }
  }
}
