// QUERIES_FILE declarations checked against the database (docs/query.md, "Checked against the
// database"): columns or a key the SQL does not produce, or SQL that does not run there, stop the
// start when PostgreSQL answers then; when it does not, the service starts, and once PostgreSQL
// is reachable such a query is logged, left out of the listing and answers a clear 503, never a
// 500 on every request.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { startApiExpectingExit, startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { startRedisProxy, type RedisProxy } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const MAIN = fileURLToPath(new URL('../../services/api/dist/main.js', import.meta.url));
const KEY = 'k';

let pg: TestPostgres;
let schema: TestSchema;
let dir: string;
let badFile: string;
let goodFile: string;

const GOOD = { name: 'alunos', sql: 'SELECT id, nome FROM alunos', key: 'id', columns: ['id', 'nome'], filters: [] };
const BAD = [
  { name: 'alunos_cpf', sql: 'SELECT id, nome FROM alunos', key: 'id', columns: ['id', 'nome', 'cpf'], filters: [] },
  {
    name: 'alunos_sem_id',
    sql: 'SELECT nome FROM alunos WHERE true [[AND nome = :nome]]',
    key: 'id',
    columns: ['nome'],
    filters: [{ name: 'nome', type: 'text' }],
  },
  { name: 'sem_tabela', sql: 'SELECT id FROM matriculas', key: 'id', columns: ['id'], filters: [] },
];

beforeAll(async () => {
  pg = await startTestPostgres();
  schema = await createTestSchema(pg.url);
  await createAuditsTable(schema.admin);
  await schema.admin.query(`CREATE TABLE alunos (id bigint PRIMARY KEY, nome text NOT NULL)`);
  await schema.admin.query(`INSERT INTO alunos VALUES (1, 'ANA'), (2, 'JOAO')`);
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-query-decl-'));
  badFile = path.join(dir, 'bad.json');
  goodFile = path.join(dir, 'good.json');
  await writeFile(badFile, JSON.stringify([GOOD, ...BAD]));
  await writeFile(goodFile, JSON.stringify([GOOD]));
}, onThisMachine(60_000));
afterAll(async () => {
  await schema?.drop();
  await pg?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const PROBLEMS = [
  `QUERIES_FILE ${'<file>'}: query "alunos_cpf": declares columns its SQL does not produce: cpf (the SQL produces: id, nome)`,
  `QUERIES_FILE ${'<file>'}: query "alunos_sem_id": declares a key its SQL does not produce: id (the SQL produces: nome)`,
  `QUERIES_FILE ${'<file>'}: query "sem_tabela": its SQL fails in PostgreSQL: relation "matriculas" does not exist (SQLSTATE 42P01)`,
];

const start = (env: Record<string, string>) => startApiExpectingExit(env, { uploadDir: path.join(dir, 'up'), killAfterMs: 20_000 });

describe('PostgreSQL reachable at start', () => {
  it(
    'a declaration that does not match the database stops the start with one line naming each problem',
    async () => {
      const { code, stderr } = await start({ DATABASE_URL: schema.url, QUERIES_FILE: badFile });
      expect(code).toBe(1);
      expect(stderr.trim()).toBe(`censo-api: could not start: ${PROBLEMS.map((p) => p.replace('<file>', badFile)).join('; ')}`);
    },
    onThisMachine(30_000),
  );
});

describe('PostgreSQL unreachable at start', () => {
  let proxy: RedisProxy;
  let service: ServiceProcess;
  let url: string;
  const query = async (params: string) => {
    const response = await fetch(`${url}/api/query${params}`, { headers: { 'x-api-key': KEY } });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    const target = new URL(schema.url);
    // Any TCP proxy will do: this one drops and refuses connections on demand.
    proxy = await startRedisProxy(`redis://${target.hostname}:${target.port || 5432}`);
    await proxy.cut();
    const viaProxy = new URL(schema.url);
    viaProxy.host = new URL(proxy.url).host;
    service = startServiceProcess(MAIN, {
      API_KEY: KEY,
      HOST: '127.0.0.1',
      PORT: '0',
      UPLOAD_DIR: path.join(dir, 'up2'),
      LOG_LEVEL: 'info',
      DATABASE_URL: viaProxy.href,
      QUERIES_FILE: badFile,
    });
    url = String((await service.line('censo-api listening', onThisMachine(20_000))).url);
  }, onThisMachine(30_000));
  afterAll(async () => {
    await service?.stop();
    await proxy?.close();
  });

  it(
    'starts, answers 503 while PostgreSQL is away, then refuses each wrong query clearly and serves the others',
    async () => {
      expect(await service.line('PostgreSQL did not answer at start: the query declarations are checked once it does')).toMatchObject({
        level: 40,
      });
      expect(await query('?query=alunos')).toEqual({ status: 503, body: { erro: 'Banco de dados indisponível.' } });

      await proxy.restore();
      let answer = await query('?query=alunos');
      await waitFor(
        async () => {
          answer = await query('?query=alunos');
          return answer.status === 200;
        },
        { timeoutMs: onThisMachine(15_000), intervalMs: 200, what: 'the query route to serve again' },
      );
      expect(answer.body).toMatchObject({
        query: 'alunos',
        count: 2,
        rows: [
          { id: '1', nome: 'ANA' },
          { id: '2', nome: 'JOAO' },
        ],
      });

      for (const { name } of BAD) {
        for (const params of [`?query=${name}`, `?query=${name}&format=csv`]) {
          expect(await query(params), params).toEqual({
            status: 503,
            body: { erro: `Consulta mal declarada: ${name} (veja o log do serviço).` },
          });
        }
      }
      expect(await service.line('query declaration does not match the database; the query is refused')).toMatchObject({ level: 50 });
      const logged = service.lines.filter((l) => l.msg === 'query declaration does not match the database; the query is refused');
      expect(logged.map((l) => [l.query, l.source, l.problem])).toEqual(
        BAD.map((q, i) => [q.name, `QUERIES_FILE ${badFile}`, PROBLEMS[i]!.replace(`QUERIES_FILE <file>: query "${q.name}": `, '')]),
      );
      const listing = await query('');
      expect(listing.status).toBe(200);
      expect((listing.body.queries as { name: string }[]).map((q) => q.name).sort()).toEqual(['alunos', 'audits']);
      // Never a 500 for them.
      expect(service.lines.filter((l) => l.status === 500)).toEqual([]);
    },
    onThisMachine(60_000),
  );
});

describe('a declaration that matches', () => {
  it(
    'starts as before',
    async () => {
      const service = startServiceProcess(MAIN, {
        API_KEY: KEY,
        HOST: '127.0.0.1',
        PORT: '0',
        UPLOAD_DIR: path.join(dir, 'up3'),
        LOG_LEVEL: 'info',
        DATABASE_URL: schema.url,
        QUERIES_FILE: goodFile,
      });
      try {
        const base = String((await service.line('censo-api listening', onThisMachine(20_000))).url);
        const response = await fetch(`${base}/api/query?query=alunos&format=csv`, { headers: { 'x-api-key': KEY } });
        expect(response.status).toBe(200);
        expect(await response.text()).toBe('id,nome\r\n1,ANA\r\n2,JOAO\r\n');
        expect(service.lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('PostgreSQL did not answer'))).toBe(false);
      } finally {
        await service.stop();
      }
    },
    onThisMachine(30_000),
  );
});
