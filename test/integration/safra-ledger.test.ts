// The season ledger (SPEC §13) on both of its databases: PGlite in a folder (the embedded default)
// and PostgreSQL (a database of this file's own): migrations once, one row per task end however
// often it is told, no person in clear in any column, deletion and retention, and the comparison
// from the ledger giving the counts the comparison gives while both rounds exist.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compararRodadas, type DivergenciaRodada, type Rodada } from '@censo/shared';
import { pgDb, pgliteDb, type SafraDb } from '../../services/api/dist/safra/db.js';
import { migrate } from '../../services/api/dist/safra/migrations.js';
import { Impressoes } from '../../services/api/dist/safra/impressao.js';
import { SafraLedger, type ArquivoSafra } from '../../services/api/dist/safra/ledger.js';
import { compararComSafra } from '../../services/api/dist/safra/comparacao.js';
import { LOCAL_DATABASE_URL } from '../helpers/postgres.js';
import { loadCatalog } from '../../services/api/dist/query/catalog.js';
import { buildPageSql } from '../../services/api/dist/query/page-sql.js';

interface Expected {
  divergencias: (DivergenciaRodada & { linha: string })[];
}
interface Pessoas {
  pessoas: Record<string, string | boolean>[];
}
const fixture = path.join(import.meta.dirname, '..', 'fixtures', 'basico');
const divergencias = (JSON.parse(await readFile(path.join(fixture, 'expected-divergencias.json'), 'utf8')) as Expected).divergencias;
const pessoas = (JSON.parse(await readFile(path.join(fixture, 'expected-pessoas.json'), 'utf8')) as Pessoas).pessoas;

/** Every personal value the fixtures hold: what no column of the ledger may carry in clear. */
const personal = new Set<string>();
for (const d of divergencias) for (const v of [d.codigo_na_escola, d.enviado, d.correto]) if (v.length >= 4) personal.add(v);
for (const p of pessoas)
  for (const key of ['codigo_na_escola', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'])
    if (typeof p[key] === 'string' && (p[key] as string).length >= 4) personal.add(p[key] as string);

const DAY = 86_400_000;
const T0 = Date.UTC(2025, 5, 2, 12);
const DONO = 'a'.repeat(32);

/** Round `lote`'s file of school `referencia` with these divergences. */
function arquivo(
  lote: string,
  n: number,
  referencia: string,
  ds: readonly DivergenciaRodada[],
  criado: number,
  falhou = false,
): ArquivoSafra {
  return {
    tarefa: `${lote}-t${n}`,
    lote,
    dono: DONO,
    loteCriadoEm: criado,
    escola: referencia,
    escolaOrigem: 'referencia',
    referencia,
    falhou,
    erro: falhou ? 'Arquivo de retorno inválido.' : null,
    concluidaEm: criado + 60_000,
    divergencias: ds.map((d) => ({
      codigo_na_escola: d.codigo_na_escola,
      chave: d.chave,
      campo: d.campo,
      correto: d.correto,
      correcao: d.correcao ?? null,
    })),
  };
}

const comRef = (referencia: string, ds: readonly DivergenciaRodada[]) => ds.map((d) => ({ ...d, referencia }));
// Round 1: schools A and B with every fixture divergence; round 2: A fixed its first two, B holds all, C is new.
const r1 = { A: comRef('escola-a', divergencias), B: comRef('escola-b', divergencias) };
const r2 = {
  A: comRef('escola-a', divergencias.slice(2)),
  B: comRef('escola-b', divergencias),
  C: comRef('escola-c', divergencias.slice(0, 3)),
};

async function suite(open: () => Promise<SafraDb>, reopen: (() => Promise<SafraDb>) | null) {
  const db = await open();
  const impressoes = new Impressoes(randomBytes(32));
  const ledger = new SafraLedger(db, impressoes);
  expect(await migrate(db)).toEqual([1, 2]);
  // A second start applies nothing.
  expect(await migrate(db)).toEqual([]);

  const round1 = [
    arquivo('l1', 1, 'escola-a', r1.A, T0),
    arquivo('l1', 2, 'escola-b', r1.B, T0),
    arquivo('l1', 3, 'escola-x', [], T0, true),
  ];
  expect(await ledger.registrar(round1)).toBe(3);
  // Told again (another replica, a retry): nothing twice.
  expect(await ledger.registrar(round1)).toBe(0);
  const count = async (table: string) => Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM safra.${table}`))[0]!.n);
  expect(await count('arquivos')).toBe(3);
  const perFile = new Set(r1.A.map((d) => JSON.stringify([d.codigo_na_escola, d.chave ?? `campo:${d.campo}`]))).size;
  expect(await count('divergencias')).toBe(perFile * 2);

  // No personal value in clear, in any column of any row.
  for (const table of ['arquivos', 'divergencias', 'migracoes']) {
    const rows = await db.query<Record<string, unknown>>(`SELECT * FROM safra.${table}`);
    const text = JSON.stringify(rows);
    for (const value of personal) expect(text.includes(value), `${table} holds ${value}`).toBe(false);
  }

  // Round 2 three weeks later; compared with round 1 from the ledger, the counts are compararRodadas's.
  const t2 = T0 + 21 * DAY;
  const atual: () => Rodada = () => ({
    referencias: ['escola-a', 'escola-b', 'escola-c'],
    divergencias: [...r2.A, ...r2.B, ...r2.C],
  });
  const anteriorRodada: Rodada = {
    referencias: ['escola-a', 'escola-b'],
    falhas: [{ referencia: 'escola-x', erro: 'Arquivo de retorno inválido.' }],
    divergencias: [...r1.A, ...r1.B],
  };
  const direta = await compararRodadas(anteriorRodada, atual());
  const rodada1 = await ledger.rodada('l1', DONO);
  expect(rodada1?.numero).toBe(1);
  expect(await ledger.rodada('l1', 'b'.repeat(32))).toBeNull();
  const viaSafra = await compararComSafra(ledger, rodada1!, DONO, atual());
  expect(viaSafra.total).toEqual(direta.total);
  expect(viaSafra.resumo).toEqual(direta.resumo);
  expect(viaSafra.referencias_sem_par).toEqual(expect.arrayContaining(direta.referencias_sem_par));
  expect(viaSafra.referencias_sem_par).toHaveLength(direta.referencias_sem_par.length);
  expect(viaSafra.comparacao.filter((l) => l.situacao === 'persistente').every((l) => l.persistente_desde === 1)).toBe(true);

  // Round 2 kept, round 3 compared with it: what persisted since round 1 says so.
  await ledger.registrar([
    arquivo('l2', 1, 'escola-a', r2.A, t2),
    arquivo('l2', 2, 'escola-b', r2.B, t2),
    arquivo('l2', 3, 'escola-c', r2.C, t2),
  ]);
  const rodada2 = await ledger.rodada('l2', DONO);
  expect(rodada2?.numero).toBe(2);
  const terceira = await compararComSafra(ledger, rodada2!, DONO, {
    referencias: ['escola-b', 'escola-c'],
    divergencias: [...r2.B, ...r2.C],
  });
  const desdeB = new Set(terceira.comparacao.filter((l) => l.referencia === 'escola-b').map((l) => l.persistente_desde));
  const desdeC = new Set(terceira.comparacao.filter((l) => l.referencia === 'escola-c').map((l) => l.persistente_desde));
  expect(desdeB).toEqual(new Set([1]));
  expect(desdeC).toEqual(new Set([2]));

  // A restart keeps the season (embedded: the same folder).
  let current = db;
  if (reopen) {
    await db.close();
    current = await reopen();
    expect(await migrate(current)).toEqual([]);
  }
  const after = new SafraLedger(current, impressoes);
  expect((await after.rodadas(DONO, 2025)).map((r) => r.lote)).toEqual(['l1', 'l2']);

  // *Apagar* on a batch removes its rows; retention removes what ended before its bound.
  await after.apagarLote('l2');
  expect((await after.rodadas(DONO, 2025)).map((r) => r.lote)).toEqual(['l1']);
  expect(Number((await current.query<{ n: string }>('SELECT count(*) AS n FROM safra.divergencias WHERE lote = $1', ['l2']))[0]!.n)).toBe(
    0,
  );
  expect(await after.varrer(T0)).toBe(0);
  expect(await after.varrer(T0 + 400 * DAY)).toBe(3);
  expect(await after.rodadas(DONO, 2025)).toEqual([]);
  // No foreign key since migration 2: the sweep takes the files' divergences itself.
  expect(Number((await current.query<{ n: string }>('SELECT count(*) AS n FROM safra.divergencias'))[0]!.n)).toBe(0);
  await current.close();
}

describe('the season ledger', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'safra-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('on PGlite in a folder, across a restart', async () => {
    await suite(
      () => pgliteDb(path.join(dir, 'pglite')),
      () => pgliteDb(path.join(dir, 'pglite')),
    );
  }, 120_000);

  it('on PostgreSQL, in a schema of its own', async () => {
    const name = `safra_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: LOCAL_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = LOCAL_DATABASE_URL.replace(/\/test$/, `/${name}`);
      await suite(() => pgDb(url), null);
      // The named query integrators page through with the keyset cursor (the query route's SQL).
      const db = await pgDb(url);
      try {
        const ledger = new SafraLedger(db, new Impressoes(randomBytes(32)));
        await ledger.registrar([arquivo('l9', 1, 'escola-a', r1.A, T0), arquivo('l9', 2, 'escola-b', r1.B, T0)]);
        // Offered as a QUERIES_FILE (docs/operacao.md): a built-in would stop the start of a query route without the ledger.
        const query = (await loadCatalog(fileURLToPath(new URL('../../services/api/data/consulta-safra.json', import.meta.url)))).get(
          'safra_escolas',
        )!;
        const page = async (after: string[] | null) => {
          const { text, values } = buildPageSql(query, new Map([['ano', '2025']]), after, 1);
          return db.query<Record<string, unknown>>(text, values);
        };
        const first = await page(null);
        expect(first).toHaveLength(1);
        expect(first[0]).toMatchObject({ tarefa: 'l9-t1', escola: 'escola-a', divergencias: r1.A.length, falhou: false });
        const second = await page([String(first[0]!.tarefa)]);
        expect(second.map((row) => row.tarefa)).toEqual(['l9-t2']);
        expect(await page(['l9-t2'])).toEqual([]);
      } finally {
        await db.close();
      }
    } finally {
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    }
  }, 120_000);

  it('on PostgreSQL, two replicas telling overlapping ends in opposite orders never deadlock (no row lost)', async () => {
    // A replica whose ledger write fails still commits its ends to Redis: a deadlock between two
    // replicas' INSERTs lost the rows only the aborted one held (47 of 300 such pairs, before the
    // rows went in task id order).
    const name = `safra_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: LOCAL_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = LOCAL_DATABASE_URL.replace(/\/test$/, `/${name}`);
    const dbs = [await pgDb(url), await pgDb(url)];
    try {
      await migrate(dbs[0]!);
      const impressoes = new Impressoes(randomBytes(32));
      const [a, b] = dbs.map((db) => new SafraLedger(db, impressoes));
      const ROUNDS = 40;
      for (let round = 0; round < ROUNDS; round++) {
        const lote = `d${round}`;
        const shared = Array.from({ length: 500 }, (_, n) => arquivo(lote, n, `escola-${n}`, [], T0));
        // Each holds one end the other does not: the one that would be lost with an aborted write.
        const first = [...shared, arquivo(lote, 1_000, 'so-a', [], T0)];
        const second = [arquivo(lote, 2_000, 'so-b', [], T0), ...[...shared].reverse()];
        const told = await Promise.allSettled([
          a!.registrar(first),
          new Promise((resolve) => setTimeout(resolve, round % 3)).then(() => b!.registrar(second)),
        ]);
        for (const outcome of told) if (outcome.status === 'rejected') throw outcome.reason;
        const rows = await dbs[0]!.query<{ n: string }>('SELECT count(*) AS n FROM safra.arquivos WHERE lote = $1', [lote]);
        expect(Number(rows[0]!.n)).toBe(502);
      }
    } finally {
      for (const db of dbs) await db.close();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    }
  }, 120_000);
});
