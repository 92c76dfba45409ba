// Issue 54, tried as staff would: four files all called retorno.json, pre-named by position
// (`retorno 1.json`…), and in the next round the schools came in another order and one file was
// renamed. Each JSON says its school (`escola`, before or after its rows): the comparison pairs
// by that INEP code, live and from the season ledger once round 1 has expired, with the true
// counts; a fifth school whose return says nothing is paired by its name, as before.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig } from '@censo/shared';
import { openSafra, type Safra, type SafraConfig } from '../../services/api/dist/safra/index.js';
import { formWith } from '../helpers/http.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/postgres.js';
import { useTestRedis } from '../helpers/redis.js';
import { CPF, NOME, retorno, type Linha } from '../helpers/retorno-linhas.js';
import { request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2025, 5, 2, 12);
const TTL_HOURS = 25 * 24;

/** A school's return: its rows wrapped with its INEP code, the code before or after them; or a bare array. */
const comEscola = (escola: string | number | null, linhas: readonly Linha[], depois = false): string => {
  const erros = JSON.parse(retorno(linhas)) as unknown[];
  if (escola === null) return JSON.stringify(erros);
  return JSON.stringify(depois ? { erros, escola } : { escola, erros });
};

const A = '11111111';
const B = '22222222';
const C = '33333333';
const D = '44444444';

/** Each round: referencia (as the page pre-named the files) → the file's text. */
const ROUNDS: ReadonlyArray<Readonly<Record<string, string>>> = [
  {
    'retorno 1.json': comEscola(`${A} - ESCOLA A`, [
      ['A1', CPF, '11111111111 -- 11111111122'],
      ['A2', NOME, 'MARIA JOSE -- MARIA JOSÉ'],
    ]),
    'retorno 2.json': comEscola(Number(B), [['B1', CPF, '22222222222 -- 22222222233']], true),
    'retorno 3.json': comEscola(C, [['C1', CPF, '33333333333 -- 33333333344']]),
    'retorno 4.json': comEscola(D, [['D1', CPF, '44444444444 -- 44444444455']], true),
    'retorno 5.json': comEscola(null, [
      ['E1', CPF, '55555555555 -- 55555555566'],
      ['E2', CPF, '55555555577 -- 55555555588'],
    ]),
  },
  {
    // B came first this time, so it got A's name, and A got B's.
    'retorno 1.json': comEscola(B, [
      ['B1', CPF, '22222222222 -- 22222222233'],
      ['B2', NOME, 'JOAO -- JOÃO PEREIRA'],
    ]),
    'retorno 2.json': comEscola(`${A} - ESCOLA A`, [['A2', NOME, 'MARIA JOSE -- MARIA JOSÉ']], true),
    'retorno 3.json': comEscola(Number(C), [['C1', CPF, '33333333333 -- 33333333344']]),
    // Renamed by hand.
    'retorno 4 corrigido.json': comEscola(D, [
      ['D1', CPF, '44444444444 -- 44444444455'],
      ['D2', CPF, '44444444466 -- 44444444477'],
    ]),
    'retorno 5.json': comEscola(null, [['E1', CPF, '55555555555 -- 55555555566']]),
  },
];

/** The true counts: each school with its own earlier file. */
const RESUMO = [
  {
    referencia: 'retorno 1.json',
    referencia_anterior: 'retorno 2.json',
    resolvidas: 0,
    persistentes: 1,
    novas: 1,
    pendentes: 2,
    grafia: 0,
  },
  {
    referencia: 'retorno 2.json',
    referencia_anterior: 'retorno 1.json',
    resolvidas: 1,
    persistentes: 1,
    novas: 0,
    pendentes: 0,
    grafia: 1,
  },
  { referencia: 'retorno 3.json', resolvidas: 0, persistentes: 1, novas: 0, pendentes: 1, grafia: 0 },
  {
    referencia: 'retorno 4 corrigido.json',
    referencia_anterior: 'retorno 4.json',
    resolvidas: 0,
    persistentes: 1,
    novas: 1,
    pendentes: 2,
    grafia: 0,
  },
  { referencia: 'retorno 5.json', resolvidas: 1, persistentes: 1, novas: 0, pendentes: 1, grafia: 0 },
];
const TOTAL = { resolvidas: 2, persistentes: 5, novas: 2, pendentes: 6, grafia: 1 };

interface Answer {
  resumo: unknown[];
  total: unknown;
  referencias_sem_par: unknown[];
  fonte?: string;
}

const redis = useTestRedis();
let work: string;
const SEGREDO = randomBytes(32).toString('base64url');

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-safra-inep-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function sendRound(server: Harness, round: number): Promise<string> {
  const lote = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
    .id as string;
  for (const [referencia, content] of Object.entries(ROUNDS[round - 1]!)) {
    const body = await formWith([{ field: 'retorno', content, filename: referencia }], { referencia });
    await waitForTarefa(server, (await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body })).json().id as string);
  }
  await request(server, 'POST', `/api/lotes/${lote}/fechar`);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', { what: 'the batch' });
  return lote;
}

const compare = async (server: Harness, atual: string, anterior: string) => {
  const answer = await request(server, 'GET', `/api/lotes/${atual}/comparacao?anterior=${anterior}`);
  expect(answer.status, answer.bytes.toString()).toBe(200);
  return answer.json() as unknown as Answer;
};

const logger = createLogger(loadConfig({ LOG_LEVEL: 'silent' }), {});

describe.each<Mode>(['embedded', 'queue'])('%s mode', (mode) => {
  let clock = T0;
  const now = () => clock;
  const safras: Safra[] = [];
  const servers: Harness[] = [];
  let database: ScratchDatabase | null = null;

  beforeAll(async () => {
    if (mode === 'queue') database = await createScratchDatabase('safra');
  });
  afterAll(async () => {
    for (const server of servers.reverse()) await server.dispose().catch(() => {});
    for (const safra of safras) await safra.close().catch(() => {});
    await database?.drop();
  });

  it('pairs renamed and shuffled files by the INEP code their returns carry, live and from the ledger', async () => {
    const url = database?.url ?? null;
    const config: SafraConfig = {
      url,
      dir: path.join(work, mode),
      segredo: url === null ? null : SEGREDO,
      retencaoMs: 400 * DAY,
      calendario: null,
    };
    const safra = (await openSafra(config, logger))!;
    safras.push(safra);
    const server = await startHarness(mode, { redisUrl: redis.url, now, env: { RESULT_TTL_HOURS: String(TTL_HOURS) }, safra });
    servers.push(server);

    const r1 = await sendRound(server, 1);
    clock = T0 + 21 * DAY;
    const r2 = await sendRound(server, 2);

    const direct = await compare(server, r2, r1);
    expect(direct.fonte).toBeUndefined();
    expect(direct.resumo).toEqual(RESUMO);
    expect(direct.total).toEqual(TOTAL);
    expect(direct.referencias_sem_par).toEqual([]);

    // The ledger keys each school by its code, and the one that carries none by its name.
    const rows = await safra.ledger.db.query<{ escola: string; escola_origem: string; referencia: string }>(
      'SELECT DISTINCT escola, escola_origem, referencia FROM safra.arquivos ORDER BY referencia, escola',
    );
    expect(rows.map((r) => [r.referencia, r.escola, r.escola_origem])).toEqual([
      ['retorno 1.json', A, 'inep'],
      ['retorno 1.json', B, 'inep'],
      ['retorno 2.json', A, 'inep'],
      ['retorno 2.json', B, 'inep'],
      ['retorno 3.json', C, 'inep'],
      ['retorno 4 corrigido.json', D, 'inep'],
      ['retorno 4.json', D, 'inep'],
      ['retorno 5.json', 'retorno 5.json', 'referencia'],
    ]);

    // Round 1 expires: the ledger answers with the same counts.
    clock = T0 + 27 * DAY;
    await waitFor(async () => (await request(server, 'GET', `/api/lotes/${r1}`)).status === 404, { what: 'round 1 to expire' });
    const fromLedger = await compare(server, r2, r1);
    expect(fromLedger.fonte).toBe('safra');
    expect(fromLedger.resumo).toEqual(direct.resumo);
    expect(fromLedger.total).toEqual(direct.total);
    expect(fromLedger.referencias_sem_par).toEqual(direct.referencias_sem_par);

    // The season sees five schools, each with a file in both rounds.
    const season = (await request(server, 'GET', '/api/safras/2025')).json() as {
      escolas: Array<{ escola: string; por_rodada: unknown[] }>;
    };
    expect(Object.fromEntries(season.escolas.map((e) => [e.escola, e.por_rodada]))).toEqual({
      [A]: [2, 1],
      [B]: [1, 2],
      [C]: [1, 1],
      [D]: [1, 2],
      'retorno 5.json': [2, 1],
    });
  }, 180_000);
});
