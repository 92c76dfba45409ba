// Corrected persons (SPEC §3.2): each divergence is matched to its record 30 in the census text
// file, and the diverged fields take the tax authority's value.
//
// Memory is the design constraint: a return near the upload limit holds ~180k divergences for
// ~105k persons, and a job thread must stay well under its heap budget while the return's reader
// is still alive. So the divergences are grouped per person as they are read (one small object
// per person, holding only the values the merge applies), the text file's first pass keeps no
// record text at all (only which groups it accounts for), and the persons' fields are read again
// from the text file by a second pass as the answer is written (censo/pessoas-corrigidas.ts).
import { parseRecord30, visitCensoLines, CENSO_FIELD, censoField, type Record30Fields } from './censo/txt.js';
import type { CensoEncoding } from './censo/decode.js';
import { toDataBr } from './dates.js';
import { detached } from './strings.js';
import { inepCpf } from './censo/inep-values.js';
import { TxtMismatchError } from './errors.js';
import { mesmaGrafia } from './reimportacao/correcao.js';
import type { AppliedChave, DivergenciaLida } from './types.js';

/** Fields a divergence replaces; `nome_mae`, `nome_pai` and `null` replace nothing. */
export const APPLIED_CHAVES: readonly AppliedChave[] = ['cpf', 'nome', 'data_nascimento', 'inep'];
const APPLIED: ReadonlySet<string> = new Set<string>(APPLIED_CHAVES);

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

/**
 * What the divergences of one person change: the `correto` of the last row (in return order) for
 * each applied field. Each value keeps the return position of the row that set it, so two groups
 * that turn out to be the same person (one by line, one by code) merge as if read as one.
 */
export class Changes {
  private cpf: string | undefined = undefined;
  private nome: string | undefined = undefined;
  private data_nascimento: string | undefined = undefined;
  private inep: string | undefined = undefined;
  private cpfAt = -1;
  private nomeAt = -1;
  private data_nascimentoAt = -1;
  private inepAt = -1;
  private maeAt = -1;
  /**
   * The Receita's mother's name (a `nome_mae` divergence, the last in the return). Never written
   * (SPEC §3.4), but the corrected file weighs it: INEP records it in filiação 1 (field 8 rule 4),
   * so writing the school's name back is a change rule 25 counts (SPEC §11).
   */
  mae: string | undefined = undefined;
  /**
   * The divergences no field of the corrected file takes (a `chave` null, the father's name), not
   * `grafia`: the corrected file's count of what it leaves out includes them (SPEC §11, issue 56).
   */
  outras: OutraDivergencia[] | undefined = undefined;

  addOutra(d: OutraDivergencia): void {
    (this.outras ??= []).push(d);
  }

  setMae(correto: string, at: number): void {
    if (at < this.maeAt) return;
    this.mae = correto;
    this.maeAt = at;
  }

  set(chave: AppliedChave, correto: string, at: number): void {
    const atKey = `${chave}At` as const;
    if (at < this[atKey]) return;
    this[chave] = correto;
    this[atKey] = at;
  }

  /** The tax authority's value for `chave`, as the return wrote it; undefined when it did not diverge. */
  get(chave: AppliedChave): string | undefined {
    return this[chave];
  }

  /** Takes `other`'s values where they come later in the return. */
  absorb(other: Changes): void {
    for (const chave of APPLIED_CHAVES) {
      const value = other[chave];
      if (value !== undefined) this.set(chave, value, other[`${chave}At`]);
    }
    if (other.mae !== undefined) this.setMae(other.mae, other.maeAt);
    for (const outra of other.outras ?? []) this.addOutra(outra);
  }
}

/** A divergence of a field the corrected file never writes. */
export interface OutraDivergencia {
  readonly chave: 'nome_pai' | null;
  readonly campo: string;
  readonly enviado: string;
  readonly correto: string;
}

export interface MergeOptions {
  readonly signal?: AbortSignal;
  /** Read chunk size for the text file (tests). */
  readonly highWaterMark?: number;
}

export interface MatchedPersons {
  /** Each record-30 line with at least one divergence (in no particular order), and what its divergences change. */
  readonly lines: ReadonlyMap<number, Changes>;
  /** How the text file was decoded; null when there was nothing to match, so it was not read. */
  readonly encoding: CensoEncoding | null;
  /**
   * The record-30 lines of the file that already hold a CPF some divergence corrects a person to
   * (field 5 rule 7: a CPF another person has is refused), by that CPF as the layout writes it.
   */
  readonly cpfHolders: ReadonlyMap<string, readonly CpfHolder[]>;
  /**
   * The persons a divergence would give each CPF (sent without one, and the Receita's CPF fits the
   * layout), by that CPF as the layout writes it: two persons given one CPF break field 5 rule 7.
   */
  readonly cpfDados: ReadonlyMap<string, readonly CpfHolder[]>;
}

/** A record 30 holding a CPF: enough to tell whether it is another person (field 5 rule 7). */
export interface CpfHolder {
  readonly linha: number;
  readonly inep: string;
  readonly codigo: string;
}

/** The value a changed field takes in the answer: birth dates as DD/MM/YYYY, the rest as written. */
function answered(chave: AppliedChave, value: string): string {
  return chave === 'data_nascimento' ? toDataBr(value) : value;
}

/** The tax authority's value of each changed field, as `/api/retorno-rf` answers it. */
export function answeredChanges(changes: Changes): Array<[AppliedChave, string]> {
  const out: Array<[AppliedChave, string]> = [];
  for (const chave of APPLIED_CHAVES) {
    const value = changes.get(chave);
    if (value !== undefined) out.push([chave, answered(chave, value)]);
  }
  return out;
}

/** A row that is certain to fail, whatever the text file holds. */
interface Failure {
  readonly at: number;
  readonly error: TxtMismatchError;
}

/**
 * The rows that point at one line number. It is its person's Changes itself, and holds as few
 * fields as it can: one of these per person is the merge's whole live state while the return is
 * read (~105k of them near the upload limit).
 */
class LineGroup extends Changes {
  /**
   * The code the group's first row gave (its key), checked against field 3; null when that row
   * left it empty. Any other code, or a code first given by a later row, is in `others`.
   */
  private code: string | null = null;
  private others: CodeClaim[] | null = null;
  /** Set by the text-file pass: false until a usable record 30 is found at the line, then the first row whose code is not the record's (or null). */
  scanned: false | Failure | null = false;

  constructor(
    /** Return position of the group's first row: it fails first when the line is no record 30. */
    readonly first: number,
    /** That row's `linha` as written, null when it is the number's plain text (the usual case). */
    readonly written: string | null,
  ) {
    super();
  }

  claim(key: string, at: number, linha: string | null): void {
    if (at === this.first) this.code = key;
    else if (key !== this.code && !this.others?.some((other) => other.key === key)) (this.others ??= []).push({ key, at, linha });
  }

  /** The first row (in return order) whose code is not `recordKey`, or null when all agree. */
  firstOtherCode(line: number, recordKey: string): Failure | null {
    let first: CodeClaim | null =
      this.code !== null && this.code !== recordKey ? { key: this.code, at: this.first, linha: this.written } : null;
    for (const other of this.others ?? []) {
      if (other.key !== recordKey && (!first || other.at < first.at)) first = other;
    }
    return first && { at: first.at, error: new TxtMismatchError({ linha: first.linha ?? String(line) }) };
  }
}

interface CodeClaim {
  readonly key: string;
  readonly at: number;
  readonly linha: string | null;
}

/** The rows without a line that give one code: the first record 30 with that code is theirs. */
class CodeGroup extends Changes {
  /** Set by the text-file pass: the line of the first usable record 30 with the code, 0 for none. */
  line = 0;

  constructor(
    readonly first: number,
    /** The first row's code, trimmed, for the 422. */
    readonly codigo: string,
  ) {
    super();
  }
}

/** The merge itself: which record 30 each divergence belongs to, and what it changes. */
export async function matchPersons(
  divergencias: AsyncIterable<DivergenciaLida> | Iterable<DivergenciaLida>,
  txtPath: string,
  options: MergeOptions = {},
): Promise<MatchedPersons> {
  const byLine = new Map<number, LineGroup>();
  const byCode = new Map<string, CodeGroup>();
  let certain: Failure | null = null;
  let at = 0;
  for await (const d of divergencias) {
    at++;
    // Nothing read after a row that must fail can fail before it, or be answered: keep reading
    // the return only so that a malformed file still answers 400.
    if (certain) continue;
    const chave = d.chave !== null && APPLIED.has(d.chave) ? (d.chave as AppliedChave) : null;
    const linha = d.linha.trim();
    const codigo = d.codigo_na_escola.trim();
    if (linha) {
      const n = lineNumber(linha);
      if (n === null) {
        certain = { at, error: new TxtMismatchError({ linha }) };
        continue;
      }
      const written = linha === String(n) ? null : detached(linha);
      let group = byLine.get(n);
      if (!group) {
        group = new LineGroup(at, written);
        byLine.set(n, group);
      }
      if (codigo) group.claim(detached(codigoKey(codigo)), at, written);
      record(group, d, chave, at);
    } else if (codigo) {
      const key = codigoKey(codigo);
      let group = byCode.get(key);
      if (!group) {
        group = new CodeGroup(at, detached(codigo));
        byCode.set(detached(key), group);
      }
      record(group, d, chave, at);
    } else {
      // Decision: without a line and without a code nothing identifies the person, and picking the
      // first record 30 with an empty own code could correct the wrong one: that is a mismatch too.
      certain = { at, error: new TxtMismatchError({ codigo: '' }) };
    }
  }
  if (at === 0) return { lines: new Map(), encoding: null, cpfHolders: new Map(), cpfDados: new Map() };

  const cpfDados = new Map<string, CpfHolder[]>();
  const cpfHolders = new Map<string, CpfHolder[]>();
  for (const group of [...byLine.values(), ...byCode.values()]) {
    const cpf = group.get('cpf');
    const written = cpf === undefined ? null : inepCpf(cpf);
    if (written !== null) cpfHolders.set(written, []);
  }

  const scan = await visitCensoLines(
    txtPath,
    {
      line(linha, text) {
        const group = byLine.get(linha);
        if (group === undefined && byCode.size === 0 && cpfHolders.size === 0) return;
        const fields = parseRecord30(text);
        if (!fields) return;
        const holders = cpfHolders.get(censoField(fields, CENSO_FIELD.cpf));
        if (holders) holders.push(cpfHolderOf(linha, fields));
        if (group === undefined && byCode.size === 0) return;
        const key = codigoKey(censoField(fields, CENSO_FIELD.codigo));
        if (group) group.scanned = group.firstOtherCode(linha, key);
        const coded = byCode.get(key);
        if (coded && coded.line === 0) coded.line = linha;
        // A person sent without a CPF whom the Receita's CPF would be written on.
        const person = group ?? (coded?.line === linha ? coded : undefined);
        const given = person?.get('cpf');
        const cpf = given === undefined || censoField(fields, CENSO_FIELD.cpf).trim() !== '' ? null : inepCpf(given);
        if (cpf !== null) {
          const dados = cpfDados.get(cpf);
          if (dados) dados.push(cpfHolderOf(linha, fields));
          else cpfDados.set(cpf, [cpfHolderOf(linha, fields)]);
        }
      },
      restart() {
        for (const holders of cpfHolders.values()) holders.length = 0;
        cpfDados.clear();
        for (const group of byLine.values()) group.scanned = false;
        for (const group of byCode.values()) group.line = 0;
      },
    },
    options,
  );

  let failure = certain;
  const fails = (candidate: Failure | null): void => {
    if (candidate && (!failure || candidate.at < failure.at)) failure = candidate;
  };
  for (const [n, group] of byLine) {
    fails(
      group.scanned === false ? { at: group.first, error: new TxtMismatchError({ linha: group.written ?? String(n) }) } : group.scanned,
    );
  }
  for (const group of byCode.values()) {
    if (group.line === 0) fails({ at: group.first, error: new TxtMismatchError({ codigo: group.codigo }) });
  }
  if (failure) throw (failure as Failure).error;

  // The persons by line: the line groups themselves, each code group added to (or merged into)
  // its line's. Unordered: both writers take the persons in the text file's own order.
  const lines: Map<number, Changes> = byLine;
  for (const group of byCode.values()) {
    const same = lines.get(group.line);
    if (same) same.absorb(group);
    else lines.set(group.line, group);
  }
  return { lines, encoding: scan.encoding, cpfHolders, cpfDados };
}

/** A record 30 as field 5 rule 7 weighs it (made only where a CPF is at stake: every line of the txt passes by). */
function cpfHolderOf(linha: number, fields: Record30Fields): CpfHolder {
  return { linha, inep: detached(censoField(fields, CENSO_FIELD.inep)), codigo: detached(censoField(fields, CENSO_FIELD.codigo)) };
}

/** What one divergence changes in its person's group. */
function record(group: Changes, d: DivergenciaLida, chave: AppliedChave | null, at: number): void {
  if (chave) group.set(chave, detached(d.correto), at);
  else if (d.chave === 'nome_mae') group.setMae(detached(d.correto), at);
  else if (!mesmaGrafia(d.chave, d.enviado, d.correto)) {
    group.addOutra({
      chave: d.chave === 'nome_pai' ? 'nome_pai' : null,
      campo: detached(d.campo),
      enviado: detached(d.enviado),
      correto: detached(d.correto),
    });
  }
}

/** A positive line number from its text (`15`, `015`); anything else cannot be a txt line. */
function lineNumber(linha: string): number | null {
  if (!/^\d+$/.test(linha)) return null;
  const n = Number(linha);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}
