// Corrected persons (SPEC §3.2): each divergence is matched to its record 30 in the census text
// file, and the diverged fields take the tax authority's value. The divergences are read first
// (only what the merge needs of each), so the text file is read once and only the referenced
// lines are kept.
import { selectRecords30, CENSO_FIELD, censoField, type Record30 } from './censo/txt.js';
import type { CensoEncoding, DecodeOptions } from './censo/decode.js';
import { toDataBr } from './dates.js';
import { detached } from './strings.js';
import { TxtMismatchError } from './errors.js';
import type { Divergencia, Pessoa } from './types.js';

/** Fields a divergence replaces; `nome_mae`, `nome_pai` and `null` replace nothing. */
export type AppliedChave = 'cpf' | 'nome' | 'data_nascimento' | 'inep';
const APPLIED: ReadonlySet<string> = new Set<AppliedChave>(['cpf', 'nome', 'data_nascimento', 'inep']);

/**
 * Canonical form of a person code for comparison: trimmed, and an all-digit code without its
 * leading zeros, because numeric xlsx cells lose them (`007` in the txt, `7` in the return).
 * Two codes are equal under SPEC §3.2 exactly when their keys are equal.
 */
export function codigoKey(codigo: string): string {
  const text = codigo.trim();
  if (!/^\d+$/.test(text)) return text;
  return text.replace(/^0+(?=\d)/, '');
}

interface Pending {
  /** The divergence's `linha` as written (trimmed); `""` means "match by code". */
  readonly linha: string;
  readonly codigo: string;
  readonly chave: AppliedChave | null;
  readonly correto: string;
}

export interface MergeOptions {
  readonly signal?: AbortSignal;
  /** Read chunk size for the text file (tests). */
  readonly highWaterMark?: number;
}

/** A record 30 with at least one divergence, and the tax authority's values for its fields. */
export interface MatchedPerson {
  readonly record: Record30;
  /** The `correto` of the last divergence of each applied field, as the return wrote it. */
  readonly changes: Readonly<Partial<Record<AppliedChave, string>>>;
}

export interface MatchedPersons {
  /** In line order. */
  readonly persons: readonly MatchedPerson[];
  /** How the text file was decoded; null when there was nothing to match, so it was not read. */
  readonly encoding: CensoEncoding | null;
}

/**
 * One Pessoa per record-30 line with at least one divergence, in line order. Throws
 * TxtMismatchError for the first divergence, in return order, that the text file cannot
 * account for; nothing is returned then.
 */
export async function mergePessoas(
  divergencias: AsyncIterable<Divergencia> | Iterable<Divergencia>,
  txtPath: string,
  options: MergeOptions = {},
): Promise<Pessoa[]> {
  return (await matchPersons(divergencias, txtPath, options)).persons.map(toPessoa);
}

/** The person `/api/retorno-rf` answers for a matched record (SPEC §3.2). */
export function toPessoa({ record, changes }: MatchedPerson): Pessoa {
  const fields = record.fields;
  return {
    codigo_na_escola: censoField(fields, CENSO_FIELD.codigo),
    linha: String(record.linha),
    cpf: changes.cpf ?? censoField(fields, CENSO_FIELD.cpf),
    nome: changes.nome ?? censoField(fields, CENSO_FIELD.nome),
    data_nascimento: toDataBr(changes.data_nascimento ?? censoField(fields, CENSO_FIELD.dataNascimento)),
    inep: changes.inep ?? censoField(fields, CENSO_FIELD.inep),
    // Never the tax authority's value: the answer reports the mother as the school has her.
    nome_mae: censoField(fields, CENSO_FIELD.filiacao1),
  };
}

/** The merge itself: which record 30 each divergence belongs to, and what it changes. */
export async function matchPersons(
  divergencias: AsyncIterable<Divergencia> | Iterable<Divergencia>,
  txtPath: string,
  options: MergeOptions = {},
): Promise<MatchedPersons> {
  const pending: Pending[] = [];
  const lines = new Set<number>();
  const codes = new Set<string>();
  for await (const d of divergencias) {
    const linha = d.linha.trim();
    pending.push({
      linha: detached(linha),
      codigo: detached(d.codigo_na_escola.trim()),
      chave: d.chave !== null && APPLIED.has(d.chave) ? (d.chave as AppliedChave) : null,
      correto: detached(d.correto),
    });
    if (linha) {
      const n = lineNumber(linha);
      if (n !== null) lines.add(n);
    } else if (d.codigo_na_escola.trim()) {
      codes.add(codigoKey(d.codigo_na_escola));
    }
  }
  if (pending.length === 0) return { persons: [], encoding: null };

  const decodeOptions: DecodeOptions = {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.highWaterMark ? { highWaterMark: options.highWaterMark } : {}),
  };
  const txt = await selectRecords30(txtPath, { lines, codes, codeKey: codigoKey }, decodeOptions);

  const persons = new Map<number, { record: Record30; changes: Partial<Record<AppliedChave, string>> }>();
  for (const p of pending) {
    const record = locate(p, txt.byLine, txt.byCode);
    let person = persons.get(record.linha);
    if (!person) {
      person = { record, changes: {} };
      persons.set(record.linha, person);
    }
    // Return order: a later row for the same field overwrites an earlier one.
    if (p.chave) person.changes[p.chave] = p.correto;
  }

  return {
    persons: [...persons.keys()].sort((a, b) => a - b).map((linha) => persons.get(linha)!),
    encoding: txt.encoding,
  };
}

function locate(p: Pending, byLine: ReadonlyMap<number, Record30>, byCode: ReadonlyMap<string, Record30>): Record30 {
  if (p.linha) {
    const n = lineNumber(p.linha);
    const record = n === null ? undefined : byLine.get(n);
    if (!record || (p.codigo && codigoKey(p.codigo) !== codigoKey(censoField(record.fields, CENSO_FIELD.codigo)))) {
      throw new TxtMismatchError({ linha: p.linha });
    }
    return record;
  }
  // Decision: without a line and without a code nothing identifies the person, and picking the
  // first record 30 with an empty own code could correct the wrong one: that is a mismatch too.
  const record = p.codigo ? byCode.get(codigoKey(p.codigo)) : undefined;
  if (!record) throw new TxtMismatchError({ codigo: p.codigo });
  return record;
}

/** A positive line number from its text (`15`, `015`); anything else cannot be a txt line. */
function lineNumber(linha: string): number | null {
  if (!/^\d+$/.test(linha)) return null;
  const n = Number(linha);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}
