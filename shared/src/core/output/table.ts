// The answers of the upload routes as tables (SPEC §3.5): the same items as the JSON answer, one
// per row, columns named and ordered as the JSON keys, every value as text.
import type { Divergencia, Pessoa } from '../types.js';
import { DIVERGENCIAS_PLANILHA, PESSOAS_PLANILHA, type Planilha } from './planilha.js';

export const DIVERGENCIA_COLUMNS = [
  'codigo_na_escola',
  'linha',
  'campo',
  'enviado',
  'correto',
  'is_filiacao',
  'chave',
  'correcao',
] as const satisfies readonly (keyof Divergencia)[];
export const PESSOA_COLUMNS = [
  'codigo_na_escola',
  'linha',
  'cpf',
  'nome',
  'data_nascimento',
  'inep',
  'nome_mae',
  'arquivo_cpf',
  'arquivo_nome',
  'arquivo_data_nascimento',
  'arquivo_inep',
  'arquivo_nome_mae',
  'nao_aplicadas',
  'regra_25',
] as const satisfies readonly (keyof Pessoa)[];

/**
 * What a job answers: the JSON key of its list (also the sheet and file name), its columns (JSON
 * and CSV, for programs) and the same table in words (XLSX, for people: SPEC §3.5, session 4).
 */
export interface TableShape {
  readonly key: string;
  readonly columns: readonly string[];
  readonly planilha: Planilha;
}

export const DIVERGENCIAS_TABLE: TableShape = { key: 'divergencias', columns: DIVERGENCIA_COLUMNS, planilha: DIVERGENCIAS_PLANILHA };
export const PESSOAS_TABLE: TableShape = { key: 'pessoas', columns: PESSOA_COLUMNS, planilha: PESSOAS_PLANILHA };

/** One value as its cell's text: booleans as `true`/`false`, a null `chave` as an empty cell. */
export function cellValue(value: unknown): string {
  return value === null || value === undefined ? '' : String(value);
}

export function cellValues(item: object, columns: readonly string[]): string[] {
  const record = item as Record<string, unknown>;
  return columns.map((column) => cellValue(record[column]));
}

export async function* tableRows(items: AsyncIterable<object> | Iterable<object>, columns: readonly string[]): AsyncGenerator<string[]> {
  for await (const item of items) yield cellValues(item, columns);
}
