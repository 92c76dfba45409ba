// Which return rows are tax-authority (Receita Federal) divergences, and what field each one is
// about (SPEC §2). Pure functions over RetornoRow; the readers decide columns, this decides rows.
import { normalize } from './normalize.js';
import { comCorrecao, decidirTodas } from './reimportacao/pessoas.js';
import type { Chave, Divergencia, DivergenciaLida, RetornoRow } from './types.js';

// A return repeats a handful of labels and messages over hundreds of thousands of rows, and
// Unicode normalisation dominates the cost of a row: remember recent results, within a bound.
const MEMO_LIMIT = 2048;
const memo = new Map<string, string>();
function normalized(text: string): string {
  let value = memo.get(text);
  if (value === undefined) {
    if (memo.size >= MEMO_LIMIT) memo.clear();
    value = normalize(text);
    memo.set(text, value);
  }
  return value;
}

/** Rule 1: the `registro` value's leading number is 30; no `registro` column counts as 30. */
export function isRegistro30(registro: string | null): boolean {
  if (registro === null) return true;
  const digits = /\d+/.exec(registro);
  return digits !== null && Number(digits[0]) === 30;
}

/** Rule 2: the normalised message cites `receita federal` or the word `rfb`. */
export function citesReceitaFederal(mensagem: string): boolean {
  let cites = citing.get(mensagem);
  if (cites === undefined) {
    if (citing.size >= MEMO_LIMIT) citing.clear();
    const text = normalized(mensagem);
    cites = text.includes('receita federal') || /\brfb\b/.test(text);
    citing.set(mensagem, cites);
  }
  return cites;
}
// Every row asks rule 2 of its message: the answer is remembered, not only the normalised text.
const citing = new Map<string, boolean>();

/** Rule 3: `<sent> -- <correct>`, split at the first `--`; `null` when absent or correct is empty. */
export function splitConteudo(conteudo: string): { enviado: string; correto: string } | null {
  const at = conteudo.indexOf('--');
  if (at < 0) return null;
  const correto = conteudo.slice(at + 2).trim();
  if (!correto) return null;
  return { enviado: conteudo.slice(0, at).trim(), correto };
}

/** The label normalised, without a leading numbering (`5 - `, `5b - `) or trailing `. : ; , -`. */
export function labelKey(campo: string): string {
  return normalized(campo)
    .replace(/^\d+[a-z]?\s*-\s*/, '')
    .replace(/[\s.:;,-]+$/, '');
}

const LABELS: ReadonlyMap<string, Chave> = new Map<string, Chave>([
  ['numero do cpf', 'cpf'],
  ['cpf', 'cpf'],
  ['nome completo', 'nome'],
  ['nome', 'nome'],
  ['data de nascimento', 'data_nascimento'],
]);

const IDENTIFICATION_LABELS: ReadonlySet<string> = new Set(['identificacao unica', 'identificacao unica (inep)', 'codigo inep', 'id inep']);

const FILIATION_WORD = /\b(?:filiacao|mae|pai)\b/;
const FILIACAO_WORD = /\bfiliacao\b/;
const EXPLICIT_PARENT = /\bfiliacao\s*([12])\b/;
const PAI_WORD = /\bpai\b/;

/** Extra field labels per `chave` (COLUMNS_FILE `"chave"`), added to SPEC §2's table. */
export type LabelSynonyms = Readonly<Partial<Record<Chave, readonly string[]>>>;

/**
 * SPEC §2's label table plus an operator's additions: `cpf`, `nome`, `data_nascimento` labels
 * map straight to their field; an `inep` label is an identification label (a parent's name when
 * the message speaks of filiation); `nome_mae`/`nome_pai` labels are filiation labels.
 */
export class FieldLabels {
  /** classifyCampo's answers by label, then message: a return repeats a handful of each. */
  readonly classified = new Map<string, Map<string, Classificacao>>();
  readonly plain: ReadonlyMap<string, Chave>;
  readonly identification: ReadonlySet<string>;
  readonly parents: ReadonlyMap<string, 'nome_mae' | 'nome_pai'>;

  constructor(extra: LabelSynonyms = {}) {
    const plain = new Map(LABELS);
    const identification = new Set(IDENTIFICATION_LABELS);
    const parents = new Map<string, 'nome_mae' | 'nome_pai'>();
    for (const [chave, labels] of Object.entries(extra) as [Chave, readonly string[]][]) {
      for (const label of labels) {
        const key = labelKey(label);
        if (plain.has(key) || identification.has(key) || parents.has(key)) continue; // built-ins first
        if (chave === 'inep') identification.add(key);
        else if (chave === 'nome_mae' || chave === 'nome_pai') parents.set(key, chave);
        else plain.set(key, chave);
      }
    }
    this.plain = plain;
    this.identification = identification;
    this.parents = parents;
  }
}

export const BUILTIN_FIELD_LABELS = new FieldLabels();

export interface Classificacao {
  readonly chave: Chave | null;
  readonly is_filiacao: boolean;
}

export function classifyCampo(campo: string, mensagem: string, labels: FieldLabels = BUILTIN_FIELD_LABELS): Classificacao {
  let byMessage = labels.classified.get(campo);
  if (byMessage === undefined) {
    if (labels.classified.size >= MEMO_LIMIT) labels.classified.clear();
    byMessage = new Map();
    labels.classified.set(campo, byMessage);
  }
  let classified = byMessage.get(mensagem);
  if (classified === undefined) {
    if (byMessage.size >= MEMO_LIMIT) byMessage.clear();
    classified = classify(campo, mensagem, labels);
    byMessage.set(mensagem, classified);
  }
  return classified;
}

function classify(campo: string, mensagem: string, labels: FieldLabels): Classificacao {
  const label = labelKey(campo);
  const plain = labels.plain.get(label);
  if (plain) return { chave: plain, is_filiacao: false };
  const parentLabel = labels.parents.get(label);
  if (parentLabel) return { chave: parentLabel, is_filiacao: true };
  const message = normalized(mensagem);
  if (labels.identification.has(label)) {
    // INEP's return files report a parent's name under the identification label; only the
    // message tells them apart (fixture `basico`).
    if (FILIATION_WORD.test(`${label} ${message}`)) return { chave: parent(label, message), is_filiacao: true };
    return { chave: 'inep', is_filiacao: false };
  }
  if (FILIACAO_WORD.test(label)) return { chave: parent(label, message), is_filiacao: true };
  return { chave: null, is_filiacao: false };
}

/** Explicit `filiacao 1`/`filiacao 2` (label, then message), else the word `pai`, else the mother. */
function parent(label: string, message: string): 'nome_mae' | 'nome_pai' {
  const explicit = EXPLICIT_PARENT.exec(label) ?? EXPLICIT_PARENT.exec(message);
  if (explicit) return explicit[1] === '2' ? 'nome_pai' : 'nome_mae';
  return PAI_WORD.test(label) || PAI_WORD.test(message) ? 'nome_pai' : 'nome_mae';
}

/**
 * The divergence a row states, or `null` when the row is not a tax-authority divergence. Its
 * `correcao` needs the person's other rows: see comDivergencias.
 */
export function toDivergencia(row: RetornoRow, labels: FieldLabels = BUILTIN_FIELD_LABELS): DivergenciaLida | null {
  if (!isRegistro30(row.registro)) return null;
  if (!citesReceitaFederal(row.mensagem)) return null;
  const content = splitConteudo(row.conteudo);
  if (!content) return null;
  const { chave, is_filiacao } = classifyCampo(row.campo, row.mensagem, labels);
  return {
    codigo_na_escola: row.codigo.trim(),
    linha: row.linha === null ? '' : row.linha.trim(),
    campo: row.campo,
    enviado: content.enviado,
    correto: content.correto,
    is_filiacao,
    chave,
  };
}

/**
 * Runs `consume` on the divergences of a return, a batch at a time (a job's pipeline: no promise
 * per row), each with its `correcao` (SPEC §11), which weighs the person's other divergences.
 * `open` reads the return from its start each time it is called: nearly always once, twice when
 * its persons' rows come apart (reimportacao/pessoas.ts); `consume` then starts its output afresh.
 */
export function comDivergencias<T>(
  open: () => AsyncIterable<readonly RetornoRow[]>,
  labels: FieldLabels,
  consume: (divergencias: AsyncGenerator<Divergencia[], void, undefined>) => Promise<T>,
): Promise<T> {
  return comCorrecao(() => lidaBatches(open(), labels), consume);
}

/** The divergences as rows state them, a batch at a time; batches without one are not handed on. */
export async function* lidaBatches(
  batches: AsyncIterable<readonly RetornoRow[]>,
  labels: FieldLabels = BUILTIN_FIELD_LABELS,
): AsyncGenerator<DivergenciaLida[], void, undefined> {
  for await (const rows of batches) {
    const found: DivergenciaLida[] = [];
    for (const row of rows) {
      const divergencia = toDivergencia(row, labels);
      if (divergencia) found.push(divergencia);
    }
    if (found.length > 0) yield found;
  }
}

/** The divergences of a return, in the return's row order, each with its `correcao`. */
export async function* findDivergencias(
  rows: AsyncIterable<RetornoRow> | Iterable<RetornoRow>,
  labels: FieldLabels = BUILTIN_FIELD_LABELS,
): AsyncGenerator<Divergencia> {
  const lidas: DivergenciaLida[] = [];
  for await (const row of rows) {
    const divergencia = toDivergencia(row, labels);
    if (divergencia) lidas.push(divergencia);
  }
  yield* decidirTodas(lidas);
}
