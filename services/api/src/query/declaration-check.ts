// A declaration checked against the database it runs on: the columns and key it declares must be
// columns its SQL produces, and the SQL must run there at all (tables, permissions, types). The
// schema validation of catalog.ts cannot know this; without the check, a typo in `columns`
// answered 500 on every request. See docs/query.md ("Checked against the database").
import { CensoError, DatabaseUnavailableError, QueryTimeoutError } from '@censo/shared';
import type { Catalog, CompiledQuery } from './catalog.js';
import { buildDescribeSql } from './page-sql.js';
import { translateError } from './pg-errors.js';

/** 503: the query's declaration does not match the database; an operator must fix it. */
export class QueryMisdeclaredError extends CensoError {
  readonly status = 503;
  readonly code = 'QUERY_MISDECLARED';
  constructor(name: string) {
    super(`Consulta mal declarada: ${name} (veja o log do serviço).`);
  }
}

/** Runs `text` with `values` and gives the names of its result's columns. */
export type Describe = (text: string, values: readonly null[]) => Promise<readonly string[]>;

/**
 * What is wrong with each declaration that does not match the database (query name → problem;
 * empty when all match). Throws DatabaseUnavailableError or QueryTimeoutError when the database
 * could not answer: nothing is known then, and the check is to be run again later.
 */
export async function checkDeclarations(catalog: Catalog, describe: Describe): Promise<Map<string, string>> {
  const problems = new Map<string, string>();
  for (const query of catalog.values()) {
    const problem = await checkDeclaration(query, describe);
    if (problem !== null) problems.set(query.name, problem);
  }
  return problems;
}

async function checkDeclaration(query: CompiledQuery, describe: Describe): Promise<string | null> {
  const { text, values } = buildDescribeSql(query);
  let produced: readonly string[];
  try {
    produced = await describe(text, values);
  } catch (err) {
    const known = translateError(err);
    if (known instanceof DatabaseUnavailableError || known instanceof QueryTimeoutError) throw known;
    // Only PostgreSQL's own refusals (a SQLSTATE) say something about the declaration.
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) throw err;
    return `its SQL fails in PostgreSQL: ${(err as Error).message} (SQLSTATE ${code})`;
  }
  const has = new Set(produced);
  const missing = (names: readonly string[]) => names.filter((name) => !has.has(name));
  const problems: string[] = [];
  const columns = missing(query.columns);
  if (columns.length > 0) problems.push(`declares columns its SQL does not produce: ${columns.join(', ')}`);
  const key = missing(query.key.filter((name) => !query.columns.includes(name)));
  if (key.length > 0) problems.push(`declares a key its SQL does not produce: ${key.join(', ')}`);
  if (problems.length === 0) return null;
  return `${problems.join('; ')} (the SQL produces: ${produced.join(', ') || 'no column'})`;
}
