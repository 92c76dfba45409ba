// Query declarations: loading, strict validation, named parameters and the keyset SQL.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@censo/shared';
import { compileCatalog, loadCatalog } from '../../services/api/dist/query/catalog.js';
import { parseSql } from '../../services/api/dist/query/sql-template.js';
import { buildPageSql } from '../../services/api/dist/query/page-sql.js';

const base = {
  name: 'q',
  sql: 'SELECT id, x FROM t WHERE true [[AND x = :x]]',
  key: 'id',
  columns: ['id', 'x'],
  filters: [{ name: 'x', type: 'text' }],
};
const compile = (value: unknown) => compileCatalog([{ source: 'test.json', value }]);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-catalog-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseSql', () => {
  it('finds :name parameters and [[ ]] blocks, skipping literals, comments and casts', () => {
    const parts = parseSql(
      "SELECT to_char(t, 'HH24:MI:SS'), x::date, \"a:b\", $$ :no $$, E'it\\'s :no' -- :no\n/* :no /* :no */ */ FROM t WHERE a = :a [[AND b = :b::int]]",
    );
    const params = parts.filter((part) => part.kind === 'param').map((part) => (part as { name: string }).name);
    expect(params).toEqual(['a']);
    const block = parts.find((part) => part.kind === 'optional');
    expect(block).toMatchObject({ kind: 'optional', params: ['b'] });
  });

  it.each([
    ["SELECT 'open", /unterminated string/],
    ['SELECT 1; DROP TABLE t', /single statement/],
    ['SELECT $1', /:name parameters, not \$n/],
    ['SELECT 1 WHERE true [[AND a = 1]]', /at least one :parameter/],
    ['SELECT 1 WHERE true [[AND a = :a [[AND b = :b]] ]]', /cannot be nested/],
    ['SELECT 1 WHERE true [[AND a = :a', /unterminated optional block/],
  ])('%s is refused', (sql, message) => {
    expect(() => parseSql(sql)).toThrow(message);
  });
});

describe('compileCatalog', () => {
  it.each([
    [{ ...base, extra: 1 }, /unknown property "extra"/],
    [{ ...base, name: 'Q-1' }, /"name" must match/],
    [{ ...base, key: 'ID' }, /"key" must be a list of lower-case identifiers/],
    [{ ...base, columns: [] }, /"columns" must not be empty/],
    [{ ...base, filters: [{ name: 'x', type: 'float' }] }, /type "float"/],
    [{ ...base, filters: [{ name: 'x', type: 'text', typo: true }] }, /filter property "typo" is unknown/],
    [{ ...base, filters: [{ name: 'limit', type: 'text' }] }, /"limit" is reserved/],
    [{ ...base, filters: [] }, /uses :x, which is not a declared filter/],
    [
      {
        ...base,
        filters: [
          { name: 'x', type: 'text' },
          { name: 'y', type: 'text' },
        ],
      },
      /filter "y" is not used/,
    ],
    [{ ...base, sql: 'SELECT id, x FROM t WHERE x = :x' }, /must be declared "required": true/],
    [{ ...base, filters: [{ name: 'x', type: 'text', notBefore: 'z' }] }, /notBefore must name another filter/],
    ['not an object', /must be a JSON object/],
    [{ ...base, titulo: '' }, /"titulo" must be a non-empty string/],
    [{ ...base, descricao: 1 }, /"descricao" must be a string/],
    [{ ...base, filters: [{ name: 'x', type: 'text', titulo: '' }] }, /filter "x" titulo must be a non-empty string/],
    [{ ...base, filters: [{ name: 'x', type: 'text', descricao: false }] }, /filter "x" descricao must be a string/],
  ])('refuses %j', (value, message) => {
    expect(() => compile(value)).toThrow(ConfigError);
    expect(() => compile(value)).toThrow(message);
  });

  it('keeps the Portuguese titulo and descricao of a query and of each filter (the staff page shows them)', () => {
    const query = compile({
      ...base,
      titulo: 'Alunos',
      descricao: 'Cada aluno.',
      filters: [{ name: 'x', type: 'text', titulo: 'Turma', descricao: 'O código da turma.' }],
    }).get('q')!;
    expect([query.titulo, query.descricao]).toEqual(['Alunos', 'Cada aluno.']);
    expect(query.filters[0]).toMatchObject({ titulo: 'Turma', descricao: 'O código da turma.' });
    const plain = compile(base).get('q')!;
    expect('titulo' in plain || 'titulo' in plain.filters[0]!).toBe(false);
  });

  it('refuses a query declared twice', () => {
    expect(() =>
      compileCatalog([
        { source: 'a', value: base },
        { source: 'b', value: base },
      ]),
    ).toThrow(/declared twice/);
  });

  it('accepts SQL as an array of lines and a required filter outside blocks', () => {
    const catalog = compile({
      ...base,
      sql: ['SELECT id, x', 'FROM t', 'WHERE x = :x'],
      filters: [{ name: 'x', type: 'text', required: true }],
    });
    expect(catalog.get('q')?.required.has('x')).toBe(true);
  });
});

describe('loadCatalog', () => {
  it('ships audits built in', async () => {
    const catalog = await loadCatalog(null);
    expect([...catalog.keys()]).toEqual(['audits']);
    expect(catalog.get('audits')?.key).toEqual(['id']);
  });

  it('adds the queries of QUERIES_FILE (one object or an array)', async () => {
    const file = path.join(dir, 'one.json');
    await writeFile(file, `\uFEFF${JSON.stringify(base)}`);
    expect([...(await loadCatalog(file)).keys()]).toEqual(['audits', 'q']);
    await writeFile(file, JSON.stringify([base, { ...base, name: 'r' }]));
    expect([...(await loadCatalog(file)).keys()]).toEqual(['audits', 'q', 'r']);
  });

  it('stops with a clear message when QUERIES_FILE is missing, not JSON or redeclares audits', async () => {
    await expect(loadCatalog(path.join(dir, 'missing.json'))).rejects.toThrow(/QUERIES_FILE .*missing\.json: cannot be read \(ENOENT\)/);
    const file = path.join(dir, 'bad.json');
    await writeFile(file, '{ nope');
    await expect(loadCatalog(file)).rejects.toThrow(/invalid JSON/);
    await writeFile(file, JSON.stringify({ ...base, name: 'audits' }));
    await expect(loadCatalog(file)).rejects.toThrow(/query "audits" is declared twice/);
  });
});

describe('buildPageSql', () => {
  it('binds every value, leaves absent optional blocks out and seeks after the cursor key', async () => {
    const audits = (await loadCatalog(null)).get('audits')!;
    const hostile = "x' OR '1'='1";
    const { text, values } = buildPageSql(
      audits,
      new Map([
        ['action', hostile],
        ['fim', '2024-01-31'],
      ]),
      ['100'],
      1001,
    );
    expect(text).not.toContain(hostile);
    expect(text).not.toContain('user_id = ');
    expect(text).toContain('AND action = $1');
    expect(text).toContain('AND audits.created_at < $2::date + 1');
    expect(text).toMatch(/WHERE q\."id" > \$3\nORDER BY q\."id"\nLIMIT \$4$/);
    expect(values).toEqual([hostile, '2024-01-31', '100', '1001']);
  });

  it('uses a row comparison for a composite key and selects key columns that are not output', () => {
    const catalog = compile({ ...base, key: ['ts', 'id'], sql: 'SELECT id, x, ts FROM t WHERE true [[AND x = :x]]' });
    const { text, values } = buildPageSql(
      catalog.get('q')!,
      new Map([
        ['x', 'a'],
        ['x2', 'ignored'],
      ]),
      ['2024-01-01 00:00:00.000001', '5'],
      11,
    );
    expect(text.startsWith('SELECT q."id", q."x", q."ts"\n')).toBe(true);
    expect(text).toContain('WHERE (q."ts", q."id") > ($2, $3)\nORDER BY q."ts", q."id"');
    expect(values).toEqual(['a', '2024-01-01 00:00:00.000001', '5', '11']);
  });

  it('binds a parameter used twice once', () => {
    const catalog = compile({ ...base, sql: 'SELECT id, x FROM t WHERE true [[AND (x = :x OR y = :x)]]' });
    const { text, values } = buildPageSql(catalog.get('q')!, new Map([['x', 'a']]), null, 2);
    expect(text).toContain('(x = $1 OR y = $1)');
    expect(values).toEqual(['a', '2']);
  });
});

describe('docs/query.md', () => {
  it('shows a JSON page as the route answers it: rows are objects keyed by column name (SPEC §3.3)', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../docs/query.md', import.meta.url), 'utf8');
    const block = /Uma página JSON:\n\n```json\n([\s\S]*?)\n```/.exec(doc);
    expect(block).not.toBeNull();
    const page = JSON.parse(block![1]!) as { columns: string[]; rows: unknown[]; count: number };
    expect(page.rows).toHaveLength(page.count);
    for (const row of page.rows) {
      expect(Array.isArray(row)).toBe(false);
      expect(Object.keys(row as object)).toEqual(page.columns);
    }
    expect(doc).not.toMatch(/rows` are \*\*arrays\*\*/);
  });
});

describe('declaration schema', () => {
  it('is documented verbatim in docs/query.md', async () => {
    const { readFile } = await import('node:fs/promises');
    const { declarationSchema } = await import('../../services/api/dist/query/declaration-schema.js');
    const doc = await readFile(new URL('../../docs/query.md', import.meta.url), 'utf8');
    expect(doc).toContain('```json\n' + JSON.stringify(declarationSchema, null, 2) + '\n```');
  });
});
