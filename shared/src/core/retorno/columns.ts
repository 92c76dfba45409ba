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

/** Extra header names per role (COLUMNS_FILE), added to the built-in synonyms. */
export type RoleSynonyms = Readonly<Partial<Record<Role, readonly string[]>>>;

/** Recognises column names: the built-in synonyms of SPEC §1.2 plus an operator's additions. */
export class ColumnNames {
  private readonly byName: ReadonlyMap<string, Role>;

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
  }

  /** The role a column name plays, or `undefined` when it plays none. */
  roleOf(name: string): Role | undefined {
    return this.byName.get(normalize(name));
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
  readonly texts: readonly string[];
  readonly roles: ReadonlySet<Role>;
}

/** How many header texts an error echoes, and how many characters of them at most. */
const MAX_ECHOED = 10;
const MAX_ECHO_CHARS = 200;

/** The better of two candidates: more roles, else the earlier one. */
export function betterCandidate(a: HeaderCandidate | null, b: HeaderCandidate | null): HeaderCandidate | null {
  if (a === null) return b;
  if (b === null) return a;
  return b.roles.size > a.roles.size ? b : a;
}

/**
 * SPEC §1.2: why the best candidate is not a header, naming what was found and what is missing,
 * e.g. `cabeçalho não reconhecido na planilha "Erros" (encontradas: Código, Campo, Descrição; faltam: mensagem).`
 * Only header texts are echoed, at most 10 and 200 characters.
 */
export function unrecognisedHeader(where: string, candidate: HeaderCandidate): string {
  let found = candidate.texts
    .slice(0, MAX_ECHOED)
    .map((text) => text.replace(/\s+/g, ' ').trim())
    .join(', ');
  if (candidate.texts.length > MAX_ECHOED) found += ', …';
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
