// Named queries are data, not code (SPEC §3.3): JSON declarations shipped in services/api/queries/
// plus an optional QUERIES_FILE of the deployment's own. This module loads them, validates them
// strictly (a typo must stop the process at start, not surface as a 500 at night): the shape by
// JSON Schema (declaration-schema.ts), the meaning here (filters used, reserved names, order
// rules); and compiles each SQL text into a template (sql-template.ts) whose `:name` parameters
// always become bound `$n` values.
import { readdir } from 'node:fs/promises';
import { ConfigError, readSettingJson } from '@censo/shared';
import { declarationProblem, type FilterType } from './declaration-schema.js';
import { collectParams, parseSql, type SqlPart } from './sql-template.js';

/** Query-string names the route itself uses; a filter cannot take them. */
export const RESERVED_PARAMS: readonly string[] = ['query', 'cursor', 'limit', 'format'];

export interface FilterDeclaration {
  readonly name: string;
  readonly type: FilterType;
  readonly description?: string;
  /** The label staff read on the page (Portuguese); the page falls back to `name`. */
  readonly titulo?: string;
  /** A sentence for staff under the field: what to type and what it selects. */
  readonly descricao?: string;
  /** A filter used outside an optional `[[ … ]]` block must always be given. */
  readonly required?: boolean;
  /** Name of another filter of the same type whose value this one may not precede (`fim` ≥ `inicio`). */
  readonly notBefore?: string;
}

export interface QueryDeclaration {
  readonly name: string;
  readonly description?: string;
  /** The query's name as staff read it on the page (Portuguese). */
  readonly titulo?: string;
  /** What the query lists, for staff. */
  readonly descricao?: string;
  /** One text, or lines joined with "\n" so the JSON stays readable. */
  readonly sql: string | readonly string[];
  /** Unique, non-NULL column(s) of the SQL's output that order the rows and carry the cursor. */
  readonly key: string | readonly string[];
  /** Output columns, in order. */
  readonly columns: readonly string[];
  readonly filters: readonly FilterDeclaration[];
}

export type CompiledFilter = FilterDeclaration & { readonly required: boolean };

export interface CompiledQuery {
  readonly name: string;
  /** Where it was declared (`queries/audits.json`, `QUERIES_FILE <path>`), for messages. */
  readonly source: string;
  readonly description: string;
  readonly titulo?: string;
  readonly descricao?: string;
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
  const value = await readSettingJson(file, source);
  // A file holds one declaration or an array of them.
  const list = Array.isArray(value) ? value : [value];
  return list.map((item) => ({ source, value: item }));
}

function compileDeclaration(value: unknown, source: string): CompiledQuery {
  const named = isObject(value) && typeof value.name === 'string';
  const fail = (why: string): never => {
    throw new ConfigError(`${source}: ${named ? `query "${(value as { name: string }).name}": ` : ''}${why}`);
  };
  const problem = declarationProblem(value);
  if (problem !== null) return fail(problem);
  const declaration = value as unknown as QueryDeclaration;
  const { name } = declaration;
  const sql = typeof declaration.sql === 'string' ? declaration.sql : declaration.sql.join('\n');
  const key = typeof declaration.key === 'string' ? [declaration.key] : [...declaration.key];
  const columns = [...declaration.columns];

  const filters = declaration.filters;
  const seen = new Set<string>();
  for (const filter of filters) {
    if (RESERVED_PARAMS.includes(filter.name)) fail(`filter name "${filter.name}" is reserved`);
    if (seen.has(filter.name)) fail(`filter "${filter.name}" is declared twice`);
    seen.add(filter.name);
  }
  for (const filter of filters) {
    if (filter.notBefore === undefined) continue;
    const other = filters.find((f) => f.name === filter.notBefore);
    if (other === undefined || other === filter || other.type !== filter.type) {
      fail(`filter "${filter.name}" notBefore must name another filter of type ${filter.type}`);
    }
  }

  let parts: SqlPart[];
  try {
    parts = parseSql(sql);
  } catch (err) {
    return fail((err as Error).message);
  }
  const used = new Set<string>();
  const outside = new Set<string>();
  collectParams(parts, used, outside);
  for (const param of used) {
    if (!seen.has(param)) fail(`SQL uses :${param}, which is not a declared filter`);
  }
  for (const filter of filters) {
    if (!used.has(filter.name)) fail(`filter "${filter.name}" is not used in the SQL`);
    if (outside.has(filter.name) && filter.required !== true) {
      fail(`filter "${filter.name}" is used outside [[ ]] and must be declared "required": true`);
    }
  }
  const required = new Set(filters.filter((f) => f.required === true).map((f) => f.name));
  return Object.freeze({
    name,
    source,
    description: declaration.description ?? '',
    ...(declaration.titulo === undefined ? {} : { titulo: declaration.titulo }),
    ...(declaration.descricao === undefined ? {} : { descricao: declaration.descricao }),
    parts,
    key,
    columns,
    filters: filters.map((f) => Object.freeze({ ...f, required: f.required === true })),
    required,
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
