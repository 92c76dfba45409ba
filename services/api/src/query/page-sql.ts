// The SQL of one page: the declared query wrapped in a keyset seek on its key, every value bound.
import type { CompiledQuery } from './catalog.js';
import type { SqlPart } from './sql-template.js';

/** Where each key column sits in a fetched row: among the output columns, or appended after them. */
export function keyIndexes(query: CompiledQuery): number[] {
  let extra = query.columns.length;
  return query.key.map((key) => {
    const index = query.columns.indexOf(key);
    return index >= 0 ? index : extra++;
  });
}

const quote = (identifier: string): string => `"${identifier}"`;

/**
 * The declared SQL wrapped in the keyset seek:
 *   SELECT q."col", … FROM (<declared SQL>) AS q WHERE q."key" > $k ORDER BY q."key" LIMIT $n
 * PostgreSQL pulls a simple subquery up into the outer query, so the seek and the ORDER BY reach
 * the table's index (`EXPLAIN` shows an index scan on the key, stopping after $n rows). Optional
 * blocks whose filters are absent are left out; every value, the cursor's too, is a bound
 * parameter whose type PostgreSQL infers from the column it is compared with.
 */
export function buildPageSql(
  query: CompiledQuery,
  filters: ReadonlyMap<string, string>,
  after: readonly string[] | null,
  limit: number,
): { text: string; values: string[] } {
  const values: string[] = [];
  const inner = renderDeclared(query, filters, values);
  const selected = [...query.columns, ...query.key.filter((key) => !query.columns.includes(key))];
  const keys = query.key.map((key) => `q.${quote(key)}`);
  let seek = '';
  if (after !== null) {
    const placeholders = after.map((value) => {
      values.push(value);
      return `$${values.length}`;
    });
    seek = keys.length === 1 ? `WHERE ${keys[0]} > ${placeholders[0]}` : `WHERE (${keys.join(', ')}) > (${placeholders.join(', ')})`;
  }
  values.push(String(limit));
  const text = [
    `SELECT ${selected.map((column) => `q.${quote(column)}`).join(', ')}`,
    `FROM (\n${inner}\n) AS q`,
    seek,
    `ORDER BY ${keys.join(', ')}`,
    `LIMIT $${values.length}`,
  ]
    .filter(Boolean)
    .join('\n');
  return { text, values };
}

/**
 * The declared SQL as run: optional blocks whose filters are all in `filters` kept, each
 * parameter a `$n` whose value is appended to `values`.
 */
function renderDeclared<V extends string | null>(query: CompiledQuery, filters: ReadonlyMap<string, V>, values: V[]): string {
  const numbers = new Map<string, number>();
  const render = (parts: readonly SqlPart[]): string =>
    parts
      .map((part) => {
        if (part.kind === 'text') return part.text;
        if (part.kind === 'optional') return part.params.every((name) => filters.has(name)) ? render(part.parts) : ' ';
        let number = numbers.get(part.name);
        if (number === undefined) {
          const value = filters.get(part.name);
          // Unreachable: required filters are checked by parseQueryRequest.
          if (value === undefined) throw new Error(`query ${query.name}: missing required filter ${part.name}`);
          values.push(value);
          number = values.length;
          numbers.set(part.name, number);
        }
        return `$${number}`;
      })
      .join('');
  return render(query.parts);
}

/**
 * The declared SQL with every optional block kept and every parameter NULL (PostgreSQL infers
 * each one's type as it does for a request), selecting everything it produces and no row:
 *   SELECT * FROM (<declared SQL>) AS q LIMIT 0
 * Its result's fields are the columns the SQL produces (declaration-check.ts). LIMIT 0 reads no
 * row, so this costs a plan, whatever the table's size.
 */
export function buildDescribeSql(query: CompiledQuery): { text: string; values: null[] } {
  const filters = new Map<string, null>(query.filters.map((filter) => [filter.name, null]));
  const values: null[] = [];
  const inner = renderDeclared(query, filters, values);
  return { text: `SELECT * FROM (\n${inner}\n) AS q\nLIMIT 0`, values };
}
