// What a route that holds a batch's divergences in memory may hold (the round comparison, the
// letters): a bound per answer and for all of the process's answers at once, in divergences and
// in the bytes of their stored results (issue 59: a count alone let a few fat divergences take
// gigabytes). Counted from the tasks' records before a divergence is read, so a refusal costs
// nothing.

import type { TarefaRecord } from '../../tarefas/model.js';

/** What an answer would hold: its divergences and their stored results' bytes. */
export interface Peso {
  divergencias: number;
  bytes: number;
}

/** Adds a concluded divergencias-rf task's result to `peso`, from its record (no result is read). */
export function pesar(peso: Peso, record: Pick<TarefaRecord, 'resultado'>): void {
  peso.divergencias += record.resultado?.count ?? 0;
  peso.bytes += record.resultado?.bytes ?? 0;
}

/** The bounds in force (tests lower them). */
export type Limite = Peso;

export class Orcamento {
  #divergencias = 0;
  #bytes = 0;

  constructor(
    readonly limite: Limite,
    /** The 422 of one answer beyond the bounds. */
    private readonly grandeDemais: (divergencias: number, bytes: number) => Error,
    /** The 503 (Retry-After) while the process's other answers hold the rest. */
    private readonly ocupado: () => Error,
  ) {}

  /** Takes room for an answer of `peso`, or refuses it; the returned function gives it back, once. */
  admitir({ divergencias, bytes }: Readonly<Peso>): () => void {
    if (divergencias > this.limite.divergencias || bytes > this.limite.bytes) throw this.grandeDemais(divergencias, bytes);
    if (this.#divergencias + divergencias > this.limite.divergencias || this.#bytes + bytes > this.limite.bytes) throw this.ocupado();
    this.#divergencias += divergencias;
    this.#bytes += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#divergencias -= divergencias;
      this.#bytes -= bytes;
    };
  }

  /** What the process's answers hold now (tests: both return to 0 after every answer). */
  emAndamento(): { readonly divergencias: number; readonly bytes: number } {
    return { divergencias: this.#divergencias, bytes: this.#bytes };
  }
}

/** Bytes in MiB as the messages write them. */
export const mib = (bytes: number): string => (bytes / (1024 * 1024)).toLocaleString('pt-BR', { maximumFractionDigits: 1 });
