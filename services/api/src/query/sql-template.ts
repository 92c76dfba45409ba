// The SQL template language of query declarations: `:name` parameters and `[[ … ]]` optional
// blocks, found by a small lexer that skips strings, quoted identifiers, comments and casts.

/** A piece of compiled SQL: literal text, a named parameter, or an optional block. */
export type SqlPart =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'param'; readonly name: string }
  | { readonly kind: 'optional'; readonly parts: readonly SqlPart[]; readonly params: readonly string[] };

/** Adds every parameter to `used`, and those outside optional blocks to `outside` too. */
export function collectParams(parts: readonly SqlPart[], used: Set<string>, outside: Set<string> | null): void {
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
        if (sql.startsWith('/*', j)) {
          depth += 1;
          j += 2;
        } else if (sql.startsWith('*/', j)) {
          depth -= 1;
          j += 2;
        } else if (j >= sql.length) throw new Error('unterminated comment in SQL');
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
