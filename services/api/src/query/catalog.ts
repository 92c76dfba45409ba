// Named queries are data, not code (SPEC §3.3): JSON declarations shipped in services/api/queries/
// plus an optional QUERIES_FILE of the deployment's own. This module loads them, validates them
// strictly (a typo must stop the process at start, not surface as a 500 at night) and compiles
// each SQL text into a template whose `:name` parameters always become bound `$n` values.
import { readdir, readFile } from 'node:fs/promises';
import { ConfigError } from '@censo/shared';

export type FilterType = 'integer' | 'text' | 'date';
const FILTER_TYPES: readonly FilterType[] = ['integer', 'text', 'date'];

/** Query-string names the route itself uses; a filter cannot take them. */
export const RESERVED_PARAMS: readonly string[] = ['query', 'cursor', 'limit', 'format'];

export interface FilterDeclaration {
  readonly name: string;
  readonly type: FilterType;
  readonly description?: string;
  /** A filter used outside an optional `[[ … ]]` block must always be given. */
  readonly required?: boolean;
  /** Name of another filter of the same type whose value this one may not precede (`fim` ≥ `inicio`). */
  readonly notBefore?: string;
}

export interface QueryDeclaration {
  readonly name: string;
  readonly description?: string;
  /** One text, or lines joined with "\n" so the JSON stays readable. */
  readonly sql: string | readonly string[];
  /** Unique, non-NULL column(s) of the SQL's output that order the rows and carry the cursor. */
  readonly key: string | readonly string[];
  /** Output columns, in order. */
  readonly columns: readonly string[];
  readonly filters: readonly FilterDeclaration[];
}

export type CompiledFilter = FilterDeclaration & { readonly required: boolean };

/** A piece of compiled SQL: literal text, a named parameter, or an optional block. */
export type SqlPart =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'param'; readonly name: string }
  | { readonly kind: 'optional'; readonly parts: readonly SqlPart[]; readonly params: readonly string[] };

export interface CompiledQuery {
  readonly name: string;
  readonly description: string;
  readonly parts: readonly SqlPart[];
  readonly key: readonly string[];
  readonly columns: readonly string[];
  readonly filters: readonly CompiledFilter[];
  /** Filters that must be given because they appear outside any optional block. */
  readonly required: ReadonlySet<string>;
}

export type Catalog = ReadonlyMap<string, CompiledQuery>;

/** The folder of built-in declarations: services/api/queries/ seen from dist/query/catalog.js. */
export const BUILTIN_QUERIES_DIR = new URL('../../queries/', import.meta.url);

/** Loads the built-in declarations and, when given, the deployment's QUERIES_FILE. */
export async function loadCatalog(queriesFile: string | null, builtinDir: URL = BUILTIN_QUERIES_DIR): Promise<Catalog> {
  const declarations: { source: string; value: unknown }[] = [];
  const names = (await readdir(builtinDir)).filter((name) => name.endsWith('.json')).sort();
  for (const name of names) {
    declarations.push(...(await readDeclarations(new URL(name, builtinDir), `queries/${name}`)));
  }
  if (queriesFile !== null) {
    declarations.push(...(await readDeclarations(queriesFile, `QUERIES_FILE ${queriesFile}`)));
  }
  return compileCatalog(declarations);
}

/** Validates and compiles declarations; throws ConfigError naming the source and the problem. */
export function compileCatalog(declarations: readonly { source: string; value: unknown }[]): Catalog {
  const catalog = new Map<string, CompiledQuery>();
  for (const { source, value } of declarations) {
    const compiled = compileDeclaration(value, source);
    if (catalog.has(compiled.name)) {
      throw new ConfigError(`${source}: query "${compiled.name}" is declared twice`);
    }
    catalog.set(compiled.name, compiled);
  }
  return catalog;
}

async function readDeclarations(file: string | URL, source: string): Promise<{ source: string; value: unknown }[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${source}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new ConfigError(`${source}: invalid JSON (${(err as Error).message})`);
  }
  // A file holds one declaration or an array of them.
  const list = Array.isArray(value) ? value : [value];
  return list.map((item) => ({ source, value: item }));
}

const NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const DECLARATION_KEYS = new Set(['name', 'description', 'sql', 'key', 'columns', 'filters']);
const FILTER_KEYS = new Set(['name', 'type', 'description', 'required', 'notBefore']);

function compileDeclaration(value: unknown, source: string): CompiledQuery {
  const fail = (why: string): never => {
    throw new ConfigError(`${source}: ${why}`);
  };
  if (!isObject(value)) return fail('a query declaration must be a JSON object');
  const where = typeof value.name === 'string' ? `query "${value.name}"` : 'query';
  for (const key of Object.keys(value)) {
    if (!DECLARATION_KEYS.has(key)) fail(`${where}: unknown property "${key}"`);
  }
  const name = value.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    return fail(`${where}: "name" must match ${NAME.source}`);
  }
  if (value.description !== undefined && typeof value.description !== 'string') {
    fail(`${where}: "description" must be a string`);
  }
  const sql = Array.isArray(value.sql) && value.sql.every((line) => typeof line === 'string')
    ? (value.sql as string[]).join('\n')
    : typeof value.sql === 'string' ? value.sql : fail(`${where}: "sql" must be a string or an array of strings`);

  // Lower-case identifiers only: they are quoted in the wrapping SELECT, and an unquoted name in
  // the declared SQL is folded to lower case by PostgreSQL, so both sides agree.
  const columns = identifierList(value.columns, `${where}: "columns"`, fail);
  const key = identifierList(typeof value.key === 'string' ? [value.key] : value.key, `${where}: "key"`, fail);
  if (columns.length === 0) fail(`${where}: "columns" must not be empty`);
  if (key.length === 0) fail(`${where}: "key" must not be empty`);

  if (!Array.isArray(value.filters)) return fail(`${where}: "filters" must be an array`);
  const filters: FilterDeclaration[] = [];
  for (const filter of value.filters as unknown[]) {
    if (!isObject(filter)) return fail(`${where}: every filter must be an object`);
    for (const prop of Object.keys(filter)) {
      if (!FILTER_KEYS.has(prop)) fail(`${where}: filter property "${prop}" is unknown`);
    }
    const filterName = filter.name;
    if (typeof filterName !== 'string' || !NAME.test(filterName)) {
      return fail(`${where}: filter "name" must match ${NAME.source}`);
    }
    if (RESERVED_PARAMS.includes(filterName)) fail(`${where}: filter name "${filterName}" is reserved`);
    if (filters.some((f) => f.name === filterName)) fail(`${where}: filter "${filterName}" is declared twice`);
    if (!FILTER_TYPES.includes(filter.type as FilterType)) {
      fail(`${where}: filter "${filterName}" has type ${JSON.stringify(filter.type)}, expected one of ${FILTER_TYPES.join(', ')}`);
    }
    if (filter.description !== undefined && typeof filter.description !== 'string') {
      fail(`${where}: filter "${filterName}" description must be a string`);
    }
    if (filter.required !== undefined && typeof filter.required !== 'boolean') {
      fail(`${where}: filter "${filterName}" required must be true or false`);
    }
    if (filter.notBefore !== undefined && typeof filter.notBefore !== 'string') {
      fail(`${where}: filter "${filterName}" notBefore must be a filter name`);
    }
    filters.push(filter as unknown as FilterDeclaration);
  }
  for (const filter of filters) {
    if (filter.notBefore === undefined) continue;
    const other = filters.find((f) => f.name === filter.notBefore);
    if (other === undefined || other === filter || other.type !== filter.type) {
      fail(`${where}: filter "${filter.name}" notBefore must name another filter of type ${filter.type}`);
    }
  }

  let parts: SqlPart[];
  try {
    parts = parseSql(sql);
  } catch (err) {
    return fail(`${where}: ${(err as Error).message}`);
  }
  const used = new Set<string>();
  const outside = new Set<string>();
  collectParams(parts, used, outside);
  for (const param of used) {
    if (!filters.some((f) => f.name === param)) fail(`${where}: SQL uses :${param}, which is not a declared filter`);
  }
  for (const filter of filters) {
    if (!used.has(filter.name)) fail(`${where}: filter "${filter.name}" is not used in the SQL`);
    if (outside.has(filter.name) && filter.required !== true) {
      fail(`${where}: filter "${filter.name}" is used outside [[ ]] and must be declared "required": true`);
    }
  }
  const required = new Set(filters.filter((f) => f.required === true).map((f) => f.name));
  return Object.freeze({
    name,
    description: (value.description as string | undefined) ?? '',
    parts,
    key,
    columns,
    filters: filters.map((f) => Object.freeze({ ...f, required: f.required === true })),
    required,
  });
}

function identifierList(value: unknown, what: string, fail: (why: string) => never): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && NAME.test(item))) {
    return fail(`${what} must be a list of lower-case identifiers (${NAME.source})`);
  }
  if (new Set(value).size !== value.length) fail(`${what} has a repeated name`);
  return value as string[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function collectParams(parts: readonly SqlPart[], used: Set<string>, outside: Set<string> | null): void {
  for (const part of parts) {
    if (part.kind === 'param') {
      used.add(part.name);
      outside?.add(part.name);
    } else if (part.kind === 'optional') {
      collectParams(part.parts, used, null);
    }
  }
}

/**
 * Splits SQL into text, `:name` parameters and `[[ … ]]` optional blocks (a block is kept only
 * when every parameter inside it is given, the Metabase convention, so an absent filter removes
 * its condition instead of relying on `:x IS NULL OR …`, which hides the index from the planner
 * under generic plans). String literals, quoted identifiers, dollar quotes, comments and `::`
 * casts are skipped, so `'HH24:MI:SS'` or `x::date` are never taken for parameters.
 */
export function parseSql(sql: string): SqlPart[] {
  const top: SqlPart[] = [];
  let current: SqlPart[] = top;
  let block: SqlPart[] | null = null;
  let text = '';
  const flush = (): void => {
    if (text) current.push({ kind: 'text', text });
    text = '';
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === "'" || c === '"') {
      // E'…' strings allow backslash escapes; standard strings and identifiers double the quote.
      const escapes = c === "'" && /[eE]/.test(sql[i - 1] ?? '') && !/[\w$]/.test(sql[i - 2] ?? '');
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new Error(`unterminated ${c === "'" ? 'string' : 'quoted identifier'} in SQL`);
        if (escapes && sql[j] === '\\') j += 2;
        else if (sql[j] === c && sql[j + 1] === c) j += 2;
        else if (sql[j] === c) break;
        else j += 1;
      }
      text += sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      text += sql.slice(i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      let depth = 0;
      let j = i;
      do {
        if (sql.startsWith('/*', j)) { depth += 1; j += 2; }
        else if (sql.startsWith('*/', j)) { depth -= 1; j += 2; }
        else if (j >= sql.length) throw new Error('unterminated comment in SQL');
        else j += 1;
      } while (depth > 0);
      text += sql.slice(i, j);
      i = j;
    } else if (c === '$' && !/[\w$]/.test(sql[i - 1] ?? '') && /^\$([A-Za-z_]\w*)?\$/.test(sql.slice(i))) {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(sql.slice(i))![0];
      const end = sql.indexOf(tag, i + tag.length);
      if (end === -1) throw new Error('unterminated dollar-quoted string in SQL');
      text += sql.slice(i, end + tag.length);
      i = end + tag.length;
    } else if (c === ':' && next === ':') {
      text += '::';
      i += 2;
    } else if (c === ':' && /[A-Za-z_]/.test(next ?? '')) {
      const name = /^[A-Za-z_]\w*/.exec(sql.slice(i + 1))![0];
      flush();
      current.push({ kind: 'param', name });
      i += 1 + name.length;
    } else if (c === '[' && next === '[') {
      if (block !== null) throw new Error('optional blocks [[ ]] cannot be nested');
      flush();
      block = [];
      current = block;
      i += 2;
    } else if (c === ']' && next === ']' && block !== null) {
      flush();
      const params = new Set<string>();
      collectParams(block, params, null);
      if (params.size === 0) throw new Error('an optional block [[ ]] must use at least one :parameter');
      top.push({ kind: 'optional', parts: block, params: [...params] });
      block = null;
      current = top;
      i += 2;
    } else if (c === '$' && /\d/.test(next ?? '')) {
      // Positional parameters would bypass the named-parameter binding.
      throw new Error('use :name parameters, not $n, in SQL');
    } else if (c === ';') {
      throw new Error('SQL must be a single statement without ";"');
    } else {
      text += c;
      i += 1;
    }
  }
  if (block !== null) throw new Error('unterminated optional block [[ in SQL');
  flush();
  return top;
}
