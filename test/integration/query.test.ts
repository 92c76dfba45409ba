// GET /api/query against a real PostgreSQL (SPEC §3.3): pagination compared with direct SQL,
// filters, every error status, CSV. The route runs behind the app's real auth hook and error
// handler, over a real socket for the streaming cases.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createFolderStorage, createLogger, loadConfig, type Config } from '@censo/shared';
import { buildApp, createQueryService, embeddedTaskBackend, type JobRunner, type QueryService } from '@censo/api';
import { encodeCursor } from '../../services/api/dist/query/cursor.js';
import { parseCsv } from '../helpers/csv.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { onThisMachine } from '../helpers/deadline.js';

const KEY = 'query-key';
const HEADERS = { 'x-api-key': KEY };
const CSV_PAGE_SIZE = 500;
const BIG_ROWS = 300_000;

// Direct SQL the pages must equal: every column as the text the API promises.
const DIRECT_COLUMNS = `id::text, auditable_id::text, user_id::text, action,
  to_char(created_at, 'YYYY-MM-DD HH24:MI:SS')`;

type Row = (string | null)[];
interface Page {
  query: string;
  count: number;
  next_cursor: string | null;
  columns: string[];
  rows: Record<string, string | null>[];
}

/** A page's rows back as arrays in `columns` order, to compare with direct SQL. */
function asArrays(page: Pick<Page, 'columns' | 'rows'>): Row[] {
  return page.rows.map((row) => {
    // SPEC §3.3: keys are exactly the columns, in their order.
    expect(Object.keys(row)).toEqual(page.columns);
    return page.columns.map((column) => row[column] as string | null);
  });
}

let server: TestPostgres;
let schema: TestSchema;
let queriesDir: string;
let total: number;
const logLines: Record<string, unknown>[] = [];
const services: QueryService[] = [];
const apps: FastifyInstance[] = [];

/** Jobs are not exercised here; a runner that refuses work keeps the app honest about that. */
const noJobs: JobRunner = {
  mode: 'in-process',
  run: () => Promise.reject(new Error('the query tests run no jobs')),
  isReady: async () => true,
  close: async () => {},
};

/** The real app (auth hook, error handler, every plugin) with the given query service. */
async function buildQueryApp(service: QueryService | null): Promise<FastifyInstance> {
  const logger = createLogger(
    { logLevel: 'info' },
    { service: 'test' },
    {
      write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>),
    },
  );
  const config = configFor({});
  const app = await buildApp({
    config,
    logger,
    runner: noJobs,
    tasks: embeddedTaskBackend(noJobs, config),
    storage: createFolderStorage(config.uploadDir),
    query: service,
  });
  await app.ready();
  apps.push(app);
  return app;
}

function configFor(env: Record<string, string>): Config {
  return loadConfig({ API_KEY: KEY, LOG_LEVEL: 'silent', QUERIES_FILE: path.join(queriesDir, 'extra.json'), ...env });
}

async function serviceFor(env: Record<string, string> = {}): Promise<QueryService> {
  const service = await createQueryService(configFor({ DATABASE_URL: schema.url, ...env }), createLogger({ logLevel: 'silent' }, {}), {
    csvPageSize: CSV_PAGE_SIZE,
  });
  services.push(service);
  return service;
}

let app: FastifyInstance;

async function get(url: string, target = app) {
  const response = await target.inject({ method: 'GET', url, headers: HEADERS });
  const isJson = String(response.headers['content-type']).startsWith('application/json');
  return { status: response.statusCode, body: (isJson ? response.json() : {}) as Record<string, unknown> & Page, response };
}

async function walk(params: string): Promise<{ rows: Row[]; pages: Page[] }> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const url: string = `/api/query?${params}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const { status, body } = await get(url);
    expect(status, JSON.stringify(body)).toBe(200);
    pages.push(body);
    cursor = body.next_cursor;
  } while (cursor !== null);
  return { rows: pages.flatMap(asArrays), pages };
}

async function direct(where = 'true', values: unknown[] = []): Promise<Row[]> {
  const result = await schema.admin.query({
    text: `SELECT ${DIRECT_COLUMNS} FROM audits WHERE ${where} ORDER BY audits.id`,
    values,
    rowMode: 'array',
  });
  return result.rows as Row[];
}

beforeAll(async () => {
  server = await startTestPostgres();
  schema = await createTestSchema(server.url);
  await createAuditsTable(schema.admin);
  // 3 500 rows: NULL user ids every 5th row, four rows per timestamp, microsecond timestamps,
  // actions that need CSV quoting.
  await schema.admin.query(`
    INSERT INTO audits (auditable_id, auditable_type, user_id, user_type, action, audited_changes, version, created_at)
    SELECT g * 10, 'Aluno', CASE WHEN g % 5 = 0 THEN NULL ELSE g % 11 END, 'User',
           CASE WHEN g % 97 = 0 THEN E'linha 1\\nlinha "2", fim' WHEN g % 89 = 0 THEN 'a,b' ELSE (ARRAY['create','update','destroy'])[g % 3 + 1] END,
           '{"nome": ["A", "B"]}', g % 4,
           timestamp '2024-03-01 00:00:00' + (g / 4) * interval '7 minutes 13.123457 seconds'
    FROM generate_series(1, 3500) g`);
  // Day boundaries for the inclusive date filters.
  await schema.admin.query(`
    INSERT INTO audits (auditable_id, user_id, action, created_at) VALUES
      (9007199254740993, 42, 'limite', '2024-03-04 23:59:59.999999'),
      (1, 42, 'limite', '2024-03-05 00:00:00'),
      (2, 42, 'limite', '2024-03-05 23:59:59.999999'),
      (3, 42, 'limite', '2024-03-06 00:00:00')`);
  // Exactly 1000 rows for one filter value.
  await schema.admin.query(`
    INSERT INTO audits (auditable_id, user_id, action, created_at)
    SELECT g, 7, 'mil', timestamp '2024-04-01' + g * interval '1 second' FROM generate_series(1, 1000) g`);
  await schema.admin.query(
    `CREATE TABLE big AS SELECT g::bigint AS id, repeat('x', 100) AS payload FROM generate_series(1, ${BIG_ROWS}) g`,
  );
  await schema.admin.query('ALTER TABLE big ADD PRIMARY KEY (id)');
  total = Number((await schema.admin.query('SELECT count(*) FROM audits')).rows[0].count);

  queriesDir = await mkdtemp(path.join(os.tmpdir(), 'censo-queries-'));
  await writeFile(
    path.join(queriesDir, 'extra.json'),
    JSON.stringify([
      {
        name: 'audits_por_data',
        description: 'Keyed on the raw timestamp and id: microseconds must survive the cursor.',
        sql: 'SELECT id, created_at AS ts FROM audits WHERE true [[AND user_id = :user_id]]',
        key: ['ts', 'id'],
        columns: ['id', 'ts'],
        filters: [{ name: 'user_id', type: 'integer' }],
      },
      {
        name: 'lenta',
        sql: 'SELECT 1 AS id FROM pg_sleep(:segundos)',
        key: 'id',
        columns: ['id'],
        filters: [{ name: 'segundos', type: 'integer', required: true }],
      },
      {
        name: 'somente_leitura',
        sql: "SELECT 1 AS id, current_setting('transaction_read_only') AS ro",
        key: 'id',
        columns: ['id', 'ro'],
        filters: [],
      },
      { name: 'grande', sql: 'SELECT id, payload FROM big', key: 'id', columns: ['id', 'payload'], filters: [] },
    ]),
  );
  app = await buildQueryApp(await serviceFor());
});

afterAll(async () => {
  for (const each of apps) await each.close();
  for (const service of services) await service.close();
  await schema?.drop();
  await server?.stop();
  if (queriesDir) await rm(queriesDir, { recursive: true, force: true });
});

describe('listing', () => {
  it('answers the queries and their filters when there is no parameter at all', async () => {
    for (const url of ['/api/query', '/api/query/', '/api/query?']) {
      const { status, body } = await get(url);
      expect(status).toBe(200);
      const audits = (body.queries as { name: string; columns: string[]; filters: { name: string; type: string }[] }[]).find(
        (query) => query.name === 'audits',
      );
      expect(audits?.columns).toEqual(['id', 'auditable_id', 'user_id', 'action', 'created_at']);
      expect(audits?.filters.map((f) => [f.name, f.type])).toEqual([
        ['user_id', 'integer'],
        ['action', 'text'],
        ['inicio', 'date'],
        ['fim', 'date'],
      ]);
    }
  });
});

describe('JSON pages', () => {
  it('walks every row in id order, 1000 per page, exactly as direct SQL returns them', async () => {
    const { rows, pages } = await walk('query=audits');
    expect(rows).toEqual(await direct());
    expect(pages).toHaveLength(Math.ceil(total / 1000));
    expect(pages.slice(0, -1).every((page) => page.count === 1000)).toBe(true);
    expect(pages.at(-1)?.count).toBe(total % 1000 || 1000);
    expect(pages[0]?.columns).toEqual(['id', 'auditable_id', 'user_id', 'action', 'created_at']);
    expect(pages[0]?.query).toBe('audits');
  });

  it('gives every value as text, NULL as null, bigints without losing digits, created_at to the second', async () => {
    const { rows } = await walk('query=audits&action=limite');
    expect(rows[0]).toEqual([expect.stringMatching(/^\d+$/), '9007199254740993', '42', 'limite', '2024-03-04 23:59:59']);
    const { body } = await get('/api/query?query=audits&limit=5');
    expect(body.rows[4]).toEqual({ id: '5', auditable_id: '50', user_id: null, action: 'destroy', created_at: '2024-03-01 00:07:13' });
    expect(JSON.stringify(body.rows[4])).toBe(
      '{"id":"5","auditable_id":"50","user_id":null,"action":"destroy","created_at":"2024-03-01 00:07:13"}',
    );
  });

  it('applies filters, with a smaller limit, across pages', async () => {
    const { rows, pages } = await walk('query=audits&user_id=3&inicio=2024-03-02&fim=2024-03-08&limit=37');
    const expected = await direct(`user_id = 3 AND created_at >= '2024-03-02' AND created_at < '2024-03-09'`);
    expect(expected.length).toBeGreaterThan(37 * 3);
    expect(rows).toEqual(expected);
    expect(pages.every((page) => page.count <= 37)).toBe(true);
  });

  it('filters by text equality', async () => {
    expect((await walk('query=audits&action=update&limit=1000')).rows).toEqual(await direct(`action = 'update'`));
  });

  it('treats inicio and fim as whole days, both inclusive', async () => {
    const { rows } = await walk('query=audits&action=limite&inicio=2024-03-05&fim=2024-03-05');
    expect(rows.map((row) => row[4])).toEqual(['2024-03-05 00:00:00', '2024-03-05 23:59:59']);
    const onlyInicio = await walk('query=audits&action=limite&inicio=2024-03-06');
    expect(onlyInicio.rows.map((row) => row[4])).toEqual(['2024-03-06 00:00:00']);
    const onlyFim = await walk('query=audits&action=limite&fim=2024-03-04');
    expect(onlyFim.rows.map((row) => row[4])).toEqual(['2024-03-04 23:59:59']);
  });

  it('answers one page and next_cursor null when exactly 1000 rows match', async () => {
    const { status, body } = await get('/api/query?query=audits&action=mil');
    expect(status).toBe(200);
    expect(body.count).toBe(1000);
    expect(body.next_cursor).toBeNull();
  });

  it('lets the limit change between pages, not the filters', async () => {
    const first = await get('/api/query?query=audits&user_id=3&limit=10');
    const cursor = encodeURIComponent(first.body.next_cursor!);
    const second = await get(`/api/query?query=audits&user_id=3&limit=20&cursor=${cursor}`);
    expect(second.status).toBe(200);
    expect(asArrays(second.body)).toEqual((await direct('user_id = 3')).slice(10, 30));
    for (const url of [
      `/api/query?query=audits&user_id=4&limit=10&cursor=${cursor}`,
      `/api/query?query=audits&limit=10&cursor=${cursor}`,
      `/api/query?query=audits&user_id=3&action=update&cursor=${cursor}`,
      `/api/query?query=audits_por_data&user_id=3&cursor=${cursor}`,
    ]) {
      const { status, body } = await get(url);
      expect(status, url).toBe(400);
      expect(body.erro).toMatch(/cursor/);
    }
  });

  it('accepts the same filter value written differently (user_id=03 and user_id=3)', async () => {
    const first = await get('/api/query?query=audits&user_id=03&limit=10');
    const second = await get(`/api/query?query=audits&user_id=3&limit=10&cursor=${encodeURIComponent(first.body.next_cursor!)}`);
    expect(second.status).toBe(200);
  });

  it('keeps microseconds in a timestamp key: no row skipped or repeated across pages', async () => {
    const pages: Page[] = [];
    let cursor: string | null = null;
    do {
      const { status, body }: { status: number; body: Page } = await get(
        `/api/query?query=audits_por_data&limit=7${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      expect(status).toBe(200);
      pages.push(body);
      cursor = body.next_cursor;
    } while (cursor !== null);
    const expected = await schema.admin.query({
      text: 'SELECT id::text, created_at::text FROM audits ORDER BY audits.created_at, audits.id',
      rowMode: 'array',
    });
    expect(pages.flatMap(asArrays)).toEqual(expected.rows);
  });

  it('runs in a read-only session', async () => {
    const { body } = await get('/api/query?query=somente_leitura');
    expect(asArrays(body)).toEqual([['1', 'on']]);
  });
});

describe('400', () => {
  const cases: [string, RegExp][] = [
    ['/api/query?query=nada', /Consulta desconhecida: nada/],
    ['/api/query?limit=5', /Parâmetro query ausente/],
    ['/api/query?query=audits&usuario=1', /Parâmetro desconhecido .*usuario/],
    ['/api/query?query=audits&user_id=abc', /user_id deve ser um número inteiro/],
    ['/api/query?query=audits&user_id=1.5', /user_id deve ser um número inteiro/],
    ['/api/query?query=audits&user_id=99999999999999999999', /user_id deve ser um número inteiro/],
    ['/api/query?query=audits&user_id=', /user_id vazio/],
    ['/api/query?query=audits&user_id=1&user_id=2', /repetido: user_id/],
    ['/api/query?query=audits&inicio=2024-3-05', /inicio deve ser uma data válida/],
    ['/api/query?query=audits&inicio=05/03/2024', /inicio deve ser uma data válida/],
    ['/api/query?query=audits&fim=2023-02-29', /fim deve ser uma data válida/],
    ['/api/query?query=audits&fim=2024-04-31', /fim deve ser uma data válida/],
    ['/api/query?query=audits&inicio=2024-03-06&fim=2024-03-05', /inicio não pode ser posterior a fim/],
    ['/api/query?query=audits&limit=0', /limit deve ser um inteiro de 1 a 1000/],
    ['/api/query?query=audits&limit=1001', /limit deve ser um inteiro de 1 a 1000/],
    ['/api/query?query=audits&limit=dez', /limit deve ser um inteiro de 1 a 1000/],
    ['/api/query?query=audits&format=xml', /format deve ser json ou csv/],
    ['/api/query?query=audits&format=csv&limit=10', /limit não se aplica/],
    ['/api/query?query=audits&cursor=abc', /cursor inválido/],
    ['/api/query?query=lenta', /obrigatório ausente: segundos/],
  ];
  it.each(cases)('%s', async (url, message) => {
    const { status, body } = await get(url);
    expect(status).toBe(400);
    expect(Object.keys(body)).toEqual(['erro']);
    expect(body.erro).toMatch(message);
  });

  it('rejects a tampered cursor', async () => {
    const { body } = await get('/api/query?query=audits&limit=10');
    const cursor = body.next_cursor!;
    const [payload, signature] = cursor.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), k: ['2000'] })).toString(
      'base64url',
    );
    for (const bad of [`${forged}.${signature}`, `${payload}.${signature.slice(0, -2)}AA`, `${payload}x.${signature}`]) {
      const response = await get(`/api/query?query=audits&limit=10&cursor=${encodeURIComponent(bad)}`);
      expect(response.status).toBe(400);
      expect(response.body.erro).toBe('Parâmetro cursor inválido.');
    }
  });

  it('rejects a correctly signed cursor whose key is not a value of the key column (400, not 500)', async () => {
    const { cursorSecret } = configFor({});
    for (const key of ['abc', '1e5', '99999999999999999999999']) {
      const cursor = encodeCursor(cursorSecret, 'audits', new Map(), [key]);
      const response = await get(`/api/query?query=audits&limit=10&cursor=${encodeURIComponent(cursor)}`);
      expect(response.status, key).toBe(400);
      expect(response.body).toEqual({ erro: 'Parâmetro cursor inválido.' });
    }
  });

  it('names an empty query parameter as such', async () => {
    for (const url of ['/api/query?query=', '/api/query?query=&limit=5']) {
      const response = await get(url);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ erro: 'Parâmetro query vazio.' });
    }
  });
});

describe('401, 503, 504', () => {
  it('requires x-api-key before anything else', async () => {
    for (const headers of [{}, { 'x-api-key': 'wrong' }]) {
      const response = await app.inject({ method: 'GET', url: '/api/query?query=audits', headers });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
    }
  });

  it('answers 503 with the exact message when DATABASE_URL is unset', async () => {
    const unconfigured = await buildQueryApp(null);
    for (const url of ['/api/query', '/api/query?query=audits']) {
      const { status, body } = await get(url, unconfigured);
      expect(status).toBe(503);
      expect(body).toEqual({ erro: 'Consulta não configurada (defina a env DATABASE_URL).' });
    }
    expect((await unconfigured.inject({ method: 'GET', url: '/api/query' })).statusCode).toBe(401);
  });

  it('answers 503 when the database cannot be reached, and is not ready', async () => {
    const unreachable = new URL(schema.url);
    unreachable.port = '1';
    unreachable.hostname = '127.0.0.1';
    const service = await serviceFor({ DATABASE_URL: unreachable.href });
    const down = await buildQueryApp(service);
    for (const url of ['/api/query?query=audits', '/api/query?query=audits&format=csv']) {
      const { status, body } = await get(url, down);
      expect(status).toBe(503);
      expect(body).toEqual({ erro: 'Banco de dados indisponível.' });
    }
    expect(await service.isReady()).toBe(false);
    expect(await services[0]!.isReady()).toBe(true);
  });

  it('answers 504 when a statement runs past QUERY_TIMEOUT_MS', async () => {
    const slow = await buildQueryApp(await serviceFor({ QUERY_TIMEOUT_MS: '200' }));
    for (const url of ['/api/query?query=lenta&segundos=5', '/api/query?query=lenta&segundos=5&format=csv']) {
      const { status, body } = await get(url, slow);
      expect(status).toBe(504);
      expect(body).toEqual({ erro: 'Tempo esgotado ao executar a consulta.' });
    }
  });
});

describe('CSV', () => {
  it('streams every matching row with a header, RFC 4180 quoting and NULL as an empty field', async () => {
    const { status, response } = await get('/api/query?query=audits&format=csv');
    expect(status).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    const records = parseCsv(response.body);
    expect(records[0]).toEqual(['id', 'auditable_id', 'user_id', 'action', 'created_at']);
    expect(records.slice(1)).toEqual((await direct()).map((row) => row.map((value) => value ?? '')));
    expect(records).toHaveLength(total + 1);
    expect(response.body).toContain('\r\n97,970,9,"linha 1\nlinha ""2"", fim",');
    expect(response.body).toContain(',"a,b",');
    expect(response.body).toContain('\r\n5,50,,destroy,2024-03-01 00:07:13\r\n');
  });

  it('applies the filters and may start after a cursor', async () => {
    const { response } = await get('/api/query?query=audits&format=csv&user_id=3&inicio=2024-03-02&fim=2024-03-08');
    expect(parseCsv(response.body).slice(1)).toEqual(
      (await direct(`user_id = 3 AND created_at >= '2024-03-02' AND created_at < '2024-03-09'`)).map((row) => row.map((v) => v ?? '')),
    );
    const first = await get('/api/query?query=audits&user_id=3&limit=10');
    const rest = await get(`/api/query?query=audits&user_id=3&format=csv&cursor=${encodeURIComponent(first.body.next_cursor!)}`);
    expect(parseCsv(rest.response.body).slice(1)).toEqual((await direct('user_id = 3')).slice(10).map((row) => row.map((v) => v ?? '')));
  });

  it('stops querying when the client goes away', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    logLines.length = 0;
    await new Promise<void>((resolve, reject) => {
      const request = http.get({ host: '127.0.0.1', port, path: '/api/query?query=grande&format=csv', headers: HEADERS }, (response) => {
        expect(response.statusCode).toBe(200);
        response.once('data', () => {
          request.destroy();
          resolve();
        });
      });
      request.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
    });
    await vi.waitFor(() => expect(logLines.some((line) => line.msg === 'csv export ended')).toBe(true), { timeout: onThisMachine(20_000) });
    const ended = logLines.find((line) => line.msg === 'csv export ended')!;
    expect(ended.complete).toBe(false);
    expect(ended.rows).toBeLessThan(BIG_ROWS);
  });
});
