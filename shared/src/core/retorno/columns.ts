// Column roles of a return file (SPEC §1.2): a column (xlsx header cell or JSON key) plays a role
// when its normalised name is one of the accepted synonyms.
import { normalize } from '../normalize.js';

export type Role = 'registro' | 'linha' | 'codigo' | 'campo' | 'mensagem' | 'conteudo';

export const ROLES: readonly Role[] = ['registro', 'linha', 'codigo', 'campo', 'mensagem', 'conteudo'];

const SYNONYMS: Readonly<Record<Role, readonly string[]>> = {
  registro: ['registro', 'tipo de registro', 'tipo registro', 'reg'],
  linha: ['linha', 'linha do arquivo', 'numero da linha', 'n da linha'],
  codigo: ['codigo na escola', 'codigo da pessoa fisica no sistema proprio', 'codigo da pessoa', 'codigo pessoa'],
  campo: ['campo', 'nome do campo', 'descricao do campo'],
  mensagem: ['mensagem', 'mensagem de erro', 'descricao', 'erro'],
  conteudo: ['conteudo', 'conteudo do campo', 'valor', 'valor do campo'],
};

/*
 * What the 400 for an unknown layout names (SPEC §1.2 "the headers found"), and never a data cell
 * (a data row with a "Tipo" column whose cells say "Erro", the mensagem synonym, used to
 * beat the real header and be quoted whole, CPFs and names included). The rule:
 * 1. A cell has a column name's shape when, spaces collapsed, it has 1–60 characters, at least one
 *    letter, at most 2 digits, only letters, digits, spaces and `. , ; : ( ) / _ # * ' & ? º ª ° -`,
 *    and no `--`. A CPF, a date, a line number, a code such as ALU0001, a `sent -- correct`
 *    content, a formula or a long text does not.
 * 2. A row is header-like when each of its non-empty cells plays a role or has that shape. The best
 *    candidate is a header-like row if there is one, then the one with most roles, then the first.
 * 3. A candidate that is not header-like names nothing (`encontradas: nenhuma`); the roles missing
 *    are still listed.
 * 4. Of a header-like row, a cell is named when ColumnNames.nameable(): it plays a role, or every
 *    word of it is a header word (the words of every accepted column name, COLUMNS_FILE's
 *    included, and HEADER_WORDS). The others are left out, and a final `…` says some were; so
 *    does more than 10 headers. At most 200 characters in all.
 * 5. A sheet is quoted by name only when its name is nameable; otherwise by position (`na 2ª planilha`).
 */

/** Words of common return and census headers, normalised, besides those of the column names. */
const HEADER_WORDS: readonly string[] = [
  // joining words and numbering
  ...['a', 'o', 'as', 'os', 'e', 'ou', 'de', 'da', 'do', 'das', 'dos', 'na', 'no', 'nas', 'nos', 'em', 'para', 'por', 'com'],
  ...['n', 'nº', 'num', 'cod', 'seq', 'sequencial', 'ordem', 'item', 'id', 'coluna', 'tipo'],
  // what a return reports
  ...['erros', 'inconsistencia', 'inconsistencias', 'ocorrencia', 'ocorrencias', 'critica', 'criticas', 'alerta', 'aviso'],
  ...['situacao', 'status', 'observacao', 'observacoes', 'obs', 'detalhe', 'detalhes', 'motivo', 'regra', 'valores'],
  ...['enviado', 'enviada', 'informado', 'informada', 'correto', 'correta', 'corrigido', 'atual', 'anterior', 'novo', 'nova'],
  ...['esperado', 'encontrado', 'original', 'receita', 'federal', 'rfb', 'base', 'arquivo', 'retorno', 'resultado'],
  // census fields and who they are about
  ...['escola', 'pessoa', 'fisica', 'sistema', 'proprio', 'nome', 'cpf', 'inep', 'identificacao', 'unica', 'numero'],
  ...['data', 'nascimento', 'filiacao', 'mae', 'pai', 'sexo', 'cor', 'raca', 'nacionalidade', 'uf', 'municipio'],
  ...['aluno', 'aluna', 'alunos', 'estudante', 'docente', 'profissional', 'gestor', 'turma', 'matricula', 'vinculo', 'etapa', 'ano'],
  // sheets and titles
  ...['censo', 'educacenso', 'escolar', 'planilha', 'plan', 'sheet', 'folha', 'aba', 'resumo', 'total', 'totais', 'titulo'],
  ...['relatorio', 'lista', 'dados'],
];

const MAX_NAME_CHARS = 60;
const NAME_CHARS = /^[\p{L}\p{M}\p{N} .,;:()/_#*'&?º°ª-]+$/u;
const DIGIT = /\p{N}/gu;
const LETTER = /\p{L}/u;
const NOT_LETTERS = /[^\p{L}]+/u;

/** Rule 1 above: whether a cell could be a column name rather than data. */
export function hasColumnNameShape(text: string): boolean {
  if (text.length > 4 * MAX_NAME_CHARS) return false; // spaces aside, too long: skip the regexes
  const name = text.replace(/\s+/g, ' ').trim();
  if (name.length === 0 || name.length > MAX_NAME_CHARS || name.includes('--')) return false;
  return NAME_CHARS.test(name) && LETTER.test(name) && (name.match(DIGIT)?.length ?? 0) <= 2;
}

/** The words (letter runs) of a normalised text. */
function wordsOf(normalised: string): string[] {
  return normalised.split(NOT_LETTERS).filter((word) => word !== '');
}

/** Extra header names per role (COLUMNS_FILE), added to the built-in synonyms. */
export type RoleSynonyms = Readonly<Partial<Record<Role, readonly string[]>>>;

/** Recognises column names: the built-in synonyms of SPEC §1.2 plus an operator's additions. */
export class ColumnNames {
  private readonly byName: ReadonlyMap<string, Role>;
  /** Words a header the 400 names may be made of (see unrecognisedHeader). */
  private readonly headerWords: ReadonlySet<string>;

  constructor(extra: RoleSynonyms = {}) {
    const byName = new Map<string, Role>();
    for (const role of ROLES) {
      // Built-in names first: an addition cannot take a built-in name to another role.
      for (const name of SYNONYMS[role]) byName.set(name, role);
    }
    for (const role of ROLES) {
      for (const name of extra[role] ?? []) {
        const key = normalize(name);
        if (!byName.has(key)) byName.set(key, role);
      }
    }
    this.byName = byName;
    this.headerWords = new Set([...HEADER_WORDS, ...[...byName.keys()].flatMap(wordsOf)]);
  }

  /** The role a column name plays, or `undefined` when it plays none. */
  roleOf(name: string): Role | undefined {
    return this.byName.get(normalize(name));
  }

  /**
   * Whether a 400 may name this text (a header cell, a JSON key, a sheet's name): a column name
   * it knows, or a text with the shape of one made only of header words. A person's name has
   * that shape, but not those words.
   */
  nameable(text: string): boolean {
    if (this.roleOf(text) !== undefined) return true;
    return hasColumnNameShape(text) && wordsOf(normalize(text)).every((word) => this.headerWords.has(word));
  }
}

export const BUILTIN_COLUMN_NAMES = new ColumnNames();

/** The role a column name plays under the built-in synonyms. */
export function roleOf(name: string): Role | undefined {
  return BUILTIN_COLUMN_NAMES.roleOf(name);
}

/** Portuguese names of the required roles, for messages. */
const REQUIRED_NAMES: ReadonlyArray<readonly [Role, string]> = [
  ['codigo', 'código'],
  ['campo', 'campo'],
  ['mensagem', 'mensagem'],
];

/** A header candidate: the texts of a row (or the keys of an object) and the roles they play. */
export interface HeaderCandidate {
  /** The first CANDIDATE_TEXTS non-empty texts, in column order. */
  readonly texts: readonly string[];
  readonly roles: ReadonlySet<Role>;
  /** Every non-empty cell of the row (every key) plays a role or has a column name's shape. */
  readonly headerLike: boolean;
}

/** How many header texts an error echoes, and how many characters of them at most. */
const MAX_ECHOED = 10;
const MAX_ECHO_CHARS = 200;

/** The better of two candidates (rule 2 above): header-like, else more roles, else the earlier one. */
export function betterCandidate(a: HeaderCandidate | null, b: HeaderCandidate | null): HeaderCandidate | null {
  if (a === null) return b;
  if (b === null) return a;
  if (a.headerLike !== b.headerLike) return a.headerLike ? a : b;
  return b.roles.size > a.roles.size ? b : a;
}

/** Where a sheet's candidate was found, for unrecognisedHeader (rule 5 above). */
export function inSheet(name: string, index: number, names: ColumnNames): string {
  return names.nameable(name) ? `na planilha "${name.replace(/\s+/g, ' ').trim()}"` : `na ${index + 1}ª planilha`;
}

/**
 * SPEC §1.2: why the best candidate is not a header, naming what was found and what is missing,
 * e.g. `cabeçalho não reconhecido na planilha "Erros" (encontradas: Código, Campo, Descrição; faltam: mensagem).`
 * Only header texts are named (the rule above).
 */
export function unrecognisedHeader(where: string, candidate: HeaderCandidate, names: ColumnNames): string {
  const named = candidate.headerLike ? candidate.texts.filter((text) => names.nameable(text)) : [];
  let found = named
    .slice(0, MAX_ECHOED)
    .map((text) => text.replace(/\s+/g, ' ').trim())
    .join(', ');
  if (named.length > MAX_ECHOED || (candidate.headerLike && named.length < candidate.texts.length)) found += found ? ', …' : '…';
  if (found.length > MAX_ECHO_CHARS) found = `${found.slice(0, MAX_ECHO_CHARS - 1)}…`;
  const missing = REQUIRED_NAMES.filter(([role]) => !candidate.roles.has(role)).map(([, name]) => name);
  return `cabeçalho não reconhecido ${where} (encontradas: ${found || 'nenhuma'}; faltam: ${missing.join(', ')}).`;
}

/** Header texts kept per candidate row: enough for the message, bounded in memory. */
export const CANDIDATE_TEXTS = MAX_ECHOED + 1;

/** A sheet or array is usable only with these three (SPEC §1.2). */
export function hasRequiredRoles(roles: { has(role: Role): boolean }): boolean {
  return roles.has('codigo') && roles.has('campo') && roles.has('mensagem');
}

/**
 * Whether a row carries no data in any of its mapped columns. Such rows (blank lines, rows of
 * spaces) are skipped in both formats, so a blank row never becomes a divergence candidate.
 */
export function isBlank(values: readonly (string | null)[]): boolean {
  for (const value of values) if (value !== null && value.trim() !== '') return false;
  return true;
}
