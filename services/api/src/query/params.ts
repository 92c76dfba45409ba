// Strict validation of GET /api/query's query string (SPEC §3.3). Every way a request can be
// wrong is a 400 with its own Portuguese message; nothing reaches PostgreSQL unless it is a
// declared filter with a value of its declared type, and then only as a bound parameter.
import { BadInputError, truncate } from '@censo/shared';
import type { Catalog, CompiledFilter, CompiledQuery } from './catalog.js';
import { RESERVED_PARAMS } from './catalog.js';
import { decodeCursor } from './cursor.js';

export const MAX_PAGE_SIZE = 1000;

export type QueryFormat = 'json' | 'csv';

export type QueryRequest =
  | { readonly kind: 'list' }
  | {
      readonly kind: 'run';
      readonly query: CompiledQuery;
      /** Given filters, by name, with normalised values (`007` → `7`). */
      readonly filters: ReadonlyMap<string, string>;
      /** Key value(s) of the last row already delivered; null for the first page. */
      readonly after: readonly string[] | null;
      readonly limit: number;
      readonly format: QueryFormat;
    };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** `raw` is the parsed query string: repeated names arrive as arrays. */
export function parseQueryRequest(catalog: Catalog, raw: Readonly<Record<string, unknown>>, cursorSecret: string): QueryRequest {
  const names = Object.keys(raw);
  if (names.length === 0) return { kind: 'list' };

  const values = new Map<string, string>();
  for (const name of names) {
    const value = raw[name];
    if (typeof value !== 'string') throw new BadInputError(`Parâmetro repetido: ${truncate(name)}.`);
    values.set(name, value);
  }

  const queryName = values.get('query');
  if (queryName === '') throw new BadInputError('Parâmetro query vazio.');
  if (queryName === undefined) {
    throw new BadInputError(`Parâmetro query ausente (consultas disponíveis: ${[...catalog.keys()].join(', ')}).`);
  }
  const query = catalog.get(queryName);
  if (query === undefined) throw new BadInputError(`Consulta desconhecida: ${truncate(queryName)}.`);

  for (const name of names) {
    if (!RESERVED_PARAMS.includes(name) && !query.filters.some((f) => f.name === name)) {
      throw new BadInputError(`Parâmetro desconhecido para a consulta ${query.name}: ${truncate(name)}.`);
    }
  }

  const filters = new Map<string, string>();
  for (const filter of query.filters) {
    const value = values.get(filter.name);
    if (value === undefined) {
      if (filter.required) throw new BadInputError(`Parâmetro obrigatório ausente: ${filter.name}.`);
      continue;
    }
    filters.set(filter.name, normaliseFilter(filter, value));
  }
  for (const filter of query.filters) {
    if (filter.notBefore === undefined) continue;
    const value = filters.get(filter.name);
    const lower = filters.get(filter.notBefore);
    if (value !== undefined && lower !== undefined && compare(filter, value, lower) < 0) {
      throw new BadInputError(`Parâmetro ${filter.notBefore} não pode ser posterior a ${filter.name}.`);
    }
  }

  const format = values.get('format') ?? 'json';
  if (format !== 'json' && format !== 'csv') throw new BadInputError('Parâmetro format deve ser json ou csv.');

  const rawLimit = values.get('limit');
  let limit = MAX_PAGE_SIZE;
  if (rawLimit !== undefined) {
    // CSV has no pages (SPEC §3.3): silently ignoring a limit would hand back more than asked.
    if (format === 'csv') throw new BadInputError('Parâmetro limit não se aplica a format=csv.');
    if (!/^\d{1,4}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > MAX_PAGE_SIZE) {
      throw new BadInputError(`Parâmetro limit deve ser um inteiro de 1 a ${MAX_PAGE_SIZE}.`);
    }
    limit = Number(rawLimit);
  }

  const cursor = values.get('cursor');
  const after = cursor === undefined ? null : decodeCursor(cursorSecret, cursor, query.name, filters, query.key.length);

  return { kind: 'run', query, filters, after, limit, format };
}

function normaliseFilter(filter: CompiledFilter, value: string): string {
  if (value === '') throw new BadInputError(`Parâmetro ${filter.name} vazio.`);
  switch (filter.type) {
    case 'integer': {
      // Range-checked here so an overflow is our 400, not PostgreSQL's error 22003 (a 500).
      const ok = /^[+-]?\d{1,20}$/.test(value) && BigInt(value) >= INT64_MIN && BigInt(value) <= INT64_MAX;
      if (!ok) throw new BadInputError(`Parâmetro ${filter.name} deve ser um número inteiro.`);
      return BigInt(value).toString();
    }
    case 'date': {
      if (!isCalendarDate(value)) {
        throw new BadInputError(`Parâmetro ${filter.name} deve ser uma data válida no formato AAAA-MM-DD.`);
      }
      return value;
    }
    case 'text': {
      // PostgreSQL text cannot hold NUL; refusing it here keeps it a 400.
      if (value.includes('\u0000')) throw new BadInputError(`Parâmetro ${filter.name} contém caractere inválido.`);
      return value;
    }
  }
}

/** `YYYY-MM-DD` naming a day that exists (no 2023-02-29, no year 0000). */
export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (match === null) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const days = new Date(Date.UTC(2000, month, 0)).getUTCDate(); // 2000 is a leap year
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return day <= (month === 2 && !leap ? 28 : days);
}

function compare(filter: CompiledFilter, a: string, b: string): number {
  if (filter.type === 'integer') {
    const diff = BigInt(a) - BigInt(b);
    return diff < 0n ? -1 : diff > 0n ? 1 : 0;
  }
  // ISO dates compare as text; text filters compare by code point.
  return a < b ? -1 : a > b ? 1 : 0;
}
