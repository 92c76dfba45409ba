// A divergence's `correcao` depends on its person's other divergences (rules 8 and 25 weigh them
// together). In INEP's returns a person's rows are nearly always next to each other, so a person
// is decided when the next one begins and handed on at once: the answer streams, and only the
// current person's rows are held. What a decided person may still need, should its rows come apart
// (several sheets, any order), is its summary: a number (correcao.ts, ResumoPessoa).
//
// A person whose later rows would change what was already handed on for it cannot be mended in a
// stream, so the one-pass reading stops with ForaDeOrdem and the return is read twice instead
// (comCorrecao): first every person's summary, then each divergence decided as it is read. Both
// passes hold a number per person, never the rows.
import { codigoKey } from '../merge.js';
import type { Divergencia, DivergenciaLida } from '../types.js';
import { mudaNaPessoa, naPessoa, pesoNaPessoa, sozinha, type Decisao, type ResumoPessoa } from './correcao.js';

/** The person a divergence belongs to: its line in the txt, or its code when the return has no line. */
export function pessoaKey(d: Pick<DivergenciaLida, 'linha' | 'codigo_na_escola'>): string {
  const linha = d.linha.trim();
  // A line number as INEP writes it is its own key (no other key is all digits): no new string
  // per divergence.
  if (CANONICAL_LINE.test(linha)) return linha;
  if (linha) return `l${/^\d+$/.test(linha) ? linha.replace(/^0+(?=\d)/, '') : linha}`;
  return `c${codigoKey(d.codigo_na_escola)}`;
}

const CANONICAL_LINE = /^(?:0|[1-9]\d*)$/;

/**
 * Every person decided so far, with the summary it was decided with. Persons keyed by their line
 * in the txt (nearly all) are kept a byte each in an array indexed by the line: a Map of a
 * return's 100k persons cost more than deciding them. Other keys, and lines past what a census
 * file can hold, go to a Map.
 */
class Decididas {
  static readonly MAX_LINE = 1 << 24;
  #byLine = new Uint8Array(1024);
  readonly #byKey = new Map<string, ResumoPessoa>();

  get(key: string): ResumoPessoa | undefined {
    const line = lineOf(key);
    if (line < 0) return this.#byKey.get(key);
    const stored = line < this.#byLine.length ? this.#byLine[line]! : 0;
    return stored === 0 ? undefined : stored & RESUMO_BITS;
  }

  set(key: string, resumo: ResumoPessoa): void {
    const line = lineOf(key);
    if (line < 0) {
      this.#byKey.set(key, resumo);
      return;
    }
    if (line >= this.#byLine.length) {
      const grown = new Uint8Array(Math.min(Decididas.MAX_LINE, Math.max(line + 1, this.#byLine.length * 2)));
      grown.set(this.#byLine);
      this.#byLine = grown;
    }
    this.#byLine[line] = SEEN | resumo;
  }
}

/** A summary fits in these bits (correcao.ts); SEEN marks a line whose person was decided. */
const RESUMO_BITS = 0x7f;
const SEEN = 0x80;

/** The line of a key that is one (pessoaKey: the only keys that are numbers), below Decididas.MAX_LINE; else -1. */
function lineOf(key: string): number {
  const line = key.length > 8 ? NaN : Number(key);
  return Number.isInteger(line) && line < Decididas.MAX_LINE ? line : -1;
}

/** A person's rows came apart in the return and a decision already handed on would change. */
export class ForaDeOrdem extends Error {
  constructor() {
    super("a person's rows came apart in the return and change a decision already handed on");
    this.name = 'ForaDeOrdem';
  }
}

/** The answer's item: the divergence as read, with its decision (an object literal: one shape for all). */
function decidida(d: DivergenciaLida, decision: Decisao): Divergencia {
  return {
    codigo_na_escola: d.codigo_na_escola,
    linha: d.linha,
    campo: d.campo,
    enviado: d.enviado,
    correto: d.correto,
    is_filiacao: d.is_filiacao,
    chave: d.chave,
    correcao: decision.correcao,
  };
}

/**
 * The divergences of `batches` with their `correcao`, in the same order, a person decided when
 * the next one begins. Throws ForaDeOrdem when a person's rows come apart and the later ones
 * change a decision already handed on (then see comCorrecao).
 */
export async function* emUmaPassada(batches: AsyncIterable<readonly DivergenciaLida[]>): AsyncGenerator<Divergencia[], void, undefined> {
  const decididas = new Decididas();
  let key: string | null = null;
  // The current person's rows and their decisions on their own, `count` of them (the arrays are
  // reused from person to person: setting an array's length costs more than the person).
  const rows: DivergenciaLida[] = [];
  const decisions: Decisao[] = [];
  let count = 0;
  let resumo: ResumoPessoa = 0;
  /** The summary the current person was already decided with, when its rows came apart. */
  let antes: ResumoPessoa | undefined;
  let out: Divergencia[] = [];

  const close = (): void => {
    if (key === null) return;
    if (antes !== undefined && mudaNaPessoa(antes, resumo)) throw new ForaDeOrdem();
    for (let i = 0; i < count; i++) out.push(decidida(rows[i]!, naPessoa(rows[i]!.chave, decisions[i]!, resumo)));
    decididas.set(key, resumo);
    count = 0;
  };

  let last: DivergenciaLida | undefined;
  for await (const batch of batches) {
    for (const d of batch) {
      // The same line and code as the row before is the same person: no key to work out.
      if (last === undefined || d.linha !== last.linha || d.codigo_na_escola !== last.codigo_na_escola) {
        const next = pessoaKey(d);
        if (next !== key) {
          close();
          key = next;
          antes = decididas.get(next);
          resumo = antes ?? 0;
        }
      }
      last = d;
      const decision = sozinha(d);
      rows[count] = d;
      decisions[count] = decision;
      count++;
      resumo |= pesoNaPessoa(d, decision);
    }
    if (out.length > 0) {
      yield out;
      out = [];
    }
  }
  close();
  if (out.length > 0) yield out;
}

/** Adds one divergence to its person's summary in `resumos` (the first of the two passes). */
function resumir(resumos: Map<string, ResumoPessoa>, d: DivergenciaLida): void {
  const key = pessoaKey(d);
  resumos.set(key, (resumos.get(key) ?? 0) | pesoNaPessoa(d, sozinha(d)));
}

/** One divergence decided with its person's whole summary (the second of the two passes). */
function comResumo(resumos: ReadonlyMap<string, ResumoPessoa>, d: DivergenciaLida): Divergencia {
  return decidida(d, naPessoa(d.chave, sozinha(d), resumos.get(pessoaKey(d)) ?? 0));
}

/** Every person's summary, from a whole reading of the return's divergences. */
export async function resumosDasPessoas(batches: AsyncIterable<readonly DivergenciaLida[]>): Promise<Map<string, ResumoPessoa>> {
  const resumos = new Map<string, ResumoPessoa>();
  for await (const batch of batches) for (const d of batch) resumir(resumos, d);
  return resumos;
}

/** The divergences of `batches`, each decided with its person's known summary as it is read. */
export async function* comResumos(
  batches: AsyncIterable<readonly DivergenciaLida[]>,
  resumos: ReadonlyMap<string, ResumoPessoa>,
): AsyncGenerator<Divergencia[], void, undefined> {
  for await (const batch of batches) yield batch.map((d) => comResumo(resumos, d));
}

/** Every divergence of `lidas` with its `correcao`, in the same order: the two passes over an array. */
export function decidirTodas(lidas: readonly DivergenciaLida[]): Divergencia[] {
  const resumos = new Map<string, ResumoPessoa>();
  for (const d of lidas) resumir(resumos, d);
  return lidas.map((d) => comResumo(resumos, d));
}

/**
 * Runs `consume` on a return's decided divergences: in one pass (nearly always), or, when the
 * return's persons come apart in a way one pass cannot mend, again over two passes. `open` reads
 * the return's divergences anew each time it is called; `consume` must start its output afresh
 * each time it is called (it is called a second time only after its first call threw ForaDeOrdem).
 */
export async function comCorrecao<T>(
  open: () => AsyncIterable<readonly DivergenciaLida[]>,
  consume: (divergencias: AsyncGenerator<Divergencia[], void, undefined>) => Promise<T>,
): Promise<T> {
  try {
    return await consume(emUmaPassada(open()));
  } catch (err) {
    if (!(err instanceof ForaDeOrdem)) throw err;
  }
  const resumos = await resumosDasPessoas(open());
  return consume(comResumos(open(), resumos));
}
