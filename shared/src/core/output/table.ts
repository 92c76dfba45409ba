// The answers of the upload routes as tables (SPEC §3.5): the same items as the JSON answer, one
// per row, columns named and ordered as the JSON keys, every value as text.
import type { Divergencia, Pessoa } from '../types.js';

export const DIVERGENCIA_COLUMNS = [
  'codigo_na_escola',
  'linha',
  'campo',
  'enviado',
  'correto',
  'is_filiacao',
  'chave',
] as const satisfies readonly (keyof Divergencia)[];
export const PESSOA_COLUMNS = [
  'codigo_na_escola',
  'linha',
  'cpf',
  'nome',
  'data_nascimento',
  'inep',
  'nome_mae',
] as const satisfies readonly (keyof Pessoa)[];

/** What a job answers: the JSON key of its list (also the sheet and file name) and its columns. */
export interface TableShape {
  readonly key: 'divergencias' | 'pessoas';
  readonly columns: readonly string[];
}

export const DIVERGENCIAS_TABLE: TableShape = { key: 'divergencias', columns: DIVERGENCIA_COLUMNS };
export const PESSOAS_TABLE: TableShape = { key: 'pessoas', columns: PESSOA_COLUMNS };

/** Booleans as `true`/`false`, a null `chave` as an empty cell. */
export function cellValues(item: object, columns: readonly string[]): string[] {
  const record = item as Record<string, unknown>;
  return columns.map((column) => {
    const value = record[column];
    return value === null || value === undefined ? '' : String(value);
  });
}

export async function* tableRows(items: AsyncIterable<object> | Iterable<object>, columns: readonly string[]): AsyncGenerator<string[]> {
  for await (const item of items) yield cellValues(item, columns);
}
