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

const ROLE_BY_NAME = new Map<string, Role>(
  ROLES.flatMap((role) => SYNONYMS[role].map((name) => [name, role] as const)),
);

/** The role a column name plays, or `undefined` when it plays none. */
export function roleOf(name: string): Role | undefined {
  return ROLE_BY_NAME.get(normalize(name));
}

/** A sheet or array is usable only with these three (SPEC §1.2). */
export function hasRequiredRoles(roles: { has(role: Role): boolean }): boolean {
  return roles.has('codigo') && roles.has('campo') && roles.has('mensagem');
}

export const MISSING_ROLES = 'nenhuma planilha tem as colunas código, campo e mensagem.';

/**
 * Whether a row carries no data in any of its mapped columns. Such rows (blank lines, rows of
 * spaces) are skipped in both formats, so a blank row never becomes a divergence candidate.
 */
export function isBlank(values: readonly (string | null)[]): boolean {
  for (const value of values) if (value !== null && value.trim() !== '') return false;
  return true;
}
