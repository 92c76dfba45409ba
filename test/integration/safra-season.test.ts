// A census season with a fake clock (SPEC §13): round 1, round 2 three weeks later, round 1's
// results expired, round 3. The comparison with an expired round answers from the season ledger
// with the counts it gave while both rounds existed; in embedded mode across a restart (PGlite in
// a folder, the tasks' memory forgotten), in queue mode with two API replicas on one PostgreSQL.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
/** Round 1 on 2 June 2025, within INEP's first stage. */
const T0 = Date.UTC(2025, 5, 2, 12);
/** Results kept 25 days: round 1 still exists when round 2 comes three weeks later. */
const TTL_HOURS = 25 * 24;

const ROUNDS: ReadonlyArray<Readonly<Record<string, readonly Linha[]>>> = [
  {
    'escola-a': [
      ['ALU1', CPF, '11111111111 -- 11111111122'],
      ['ALU2', NOME, 'MARIA JOSE -- MARIA JOSÉ'],
    ],
    'escola-b': [['ALU10', CPF, '22222222222 -- 22222222233']],
  },
  {
    'escola-a': [['ALU2', NOME, 'MARIA JOSE -- MARIA JOSÉ']],
    'escola-b': [
      ['ALU10', CPF, '22222222222 -- 22222222233'],
      ['ALU11', NOME, 'JOAO -- JOÃO PEREIRA'],
    ],
    'escola-c': [['ALU20', CPF, '33333333333 -- 33333333344']],
  },
  {
    'escola-a': [['ALU2', NOME, 'MARIA JOSE -- MARIA JOSÉ']],
    'escola-b': [['ALU10', CPF, '22222222222 -- 22222222233']],
  },
];

const redis = useTestRedis();
let work: string;
const SEGREDO = randomBytes(32).toString('base64url');

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-safra-'));
  for (const [i, round] of ROUNDS.entries())
    for (const [escola, linhas] of Object.entries(round)) {
      await mkdir(path.join(work, `r${i + 1}`, escola), { recursive: true });
      await writeFile(path.join(work, `r${i + 1}`, escola, 'retorno.json'), retorno(linhas));
    }
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function sendRound(server: Harness, round: number): Promise<string> {
  const lote = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
    .id as string;
  for (const escola of Object.keys(ROUNDS[round - 1]!)) {
    const file = path.join(work, `r${round}`, escola, 'retorno.json');
    const body = await formWith([{ field: 'retorno', path: file, filename: 'retorno.json' }], { referencia: `${escola}/retorno.json` });
    const task = (await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body })).json().id as string;
    await waitForTarefa(server, task);
  }
  await request(server, 'POST', `/api/lotes/${lote}/fechar`);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', {
    what: 'the batch to end',
  });
  return lote;
}

interface Answer {
  resumo: unknown[];
  total: unknown;
  referencias_sem_par: unknown[];
  fonte?: string;
  comparacao: Array<{ referencia: string; situacao: string; persistente_desde?: number | null; codigo_na_escola: string }>;
}

/** What the test reads of the app's prom-client registry. */
interface MetricsRegistry {
  getSingleMetric(name: string): { get(): Promise<{ values: Array<{ value: number }> }> } | undefined;
}

interface SeasonAnswer {
  rodadas: Array<{ rodada: number; escolas: number; divergencias: number; escolas_sem_divergencias: number }>;
  escolas: Array<{ escola: string; por_rodada: (number | null)[]; abertas: number; abertas_desde: number | null; ultima_rodada: number }>;
  prazo: { etapa: string; fim: string; dias: number } | null;
}

const compare = async (server: Harness, atual: string, anterior: string) => {
  const answer = await request(server, 'GET', `/api/lotes/${atual}/comparacao?anterior=${anterior}`);
  expect(answer.status, answer.bytes.toString()).toBe(200);
  return answer.json() as unknown as Answer;
};

async function expire(server: Harness, lote: string) {
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).status === 404, { what: 'the batch to expire' });
}

const safraConfig = (dir: string, url: string | null): SafraConfig => ({
  url,
  dir,
  segredo: url === null ? null : SEGREDO,
  retencaoMs: 400 * DAY,
  calendario: null,
});
const logger = createLogger(loadConfig({ LOG_LEVEL: 'silent' }), {});

describe.each<Mode>(['embedded', 'queue'])('%s mode', (mode) => {
  let clock = T0;
  const now = () => clock;
  const safras: Safra[] = [];
  const servers: Harness[] = [];
  let database: ScratchDatabase | null = null;

  async function open(dir: string): Promise<Safra> {
    const url = database?.url ?? null;
    const safra = await openSafra(safraConfig(dir, url), logger);
    safras.push(safra!);
    return safra!;
  }

  async function start(dir: string, sameAs?: Harness): Promise<Harness> {
    const safra = await open(dir);
    const server = await startHarness(mode, {
      redisUrl: redis.url,
      now,
      env: { RESULT_TTL_HOURS: String(TTL_HOURS) },
      ...(sameAs ? { sameAs } : {}),
      safra,
    });
    servers.push(server);
    return server;
  }

  beforeAll(async () => {
    if (mode === 'queue') database = await createScratchDatabase('safra');
  });
  afterAll(async () => {
    for (const server of servers.reverse()) await server.dispose().catch(() => {});
    for (const safra of safras) await safra.close().catch(() => {});
    await database?.drop();
  });

  it('compares with an expired round from the ledger, with the counts it gave while both existed', async () => {
    const dir = path.join(work, `safra-${mode}`);
    let server = await start(dir);
    // Queue mode: a second replica on the same queue and ledger records some of the ends.
    const replica = mode === 'queue' ? await start(dir, server) : null;

    const r1 = await sendRound(server, 1);
    clock = T0 + 21 * DAY;
    const r2 = await sendRound(replica ?? server, 2);
    const direct = await compare(server, r2, r1);
    expect(direct.fonte).toBeUndefined();
    // ALU2's name differs only in how the census writes it (grafia): it persists, and is not pending (issue 56).
    expect(direct.total).toEqual({ resolvidas: 1, persistentes: 2, novas: 1, pendentes: 2, grafia: 1 });

    // Round 1's results expire (25 days after it ended); round 2's are still kept.
    clock = T0 + 27 * DAY;
    await expire(server, r1);
    const fromLedger = await compare(replica ?? server, r2, r1);
    expect(fromLedger.fonte).toBe('safra');
    expect(fromLedger.total).toEqual(direct.total);
    expect(fromLedger.resumo).toEqual(direct.resumo);
    expect(fromLedger.referencias_sem_par).toEqual(direct.referencias_sem_par);
    const persistent = fromLedger.comparacao.filter((l) => l.situacao === 'persistente');
    expect(persistent.map((l) => l.persistente_desde)).toEqual([1, 1]);

    // A malformed or unknown earlier round keeps its 404.
    for (const anterior of ['nada', '0'.repeat(26), 'x'.repeat(300)]) {
      const answer = await request(server, 'GET', `/api/lotes/${r2}/comparacao?anterior=${anterior}`);
      expect(answer.status).toBe(404);
      expect(answer.json()).toEqual({ erro: 'Lote não encontrado.' });
    }

    if (mode === 'embedded') {
      // A restart: the tasks' memory is gone, the season is not.
      await server.stop();
      await safras.at(-1)!.close();
      server = await start(dir);
    }
    clock = T0 + 35 * DAY;
    const r3 = await sendRound(server, 3);
    // Round 2 is gone after the restart (embedded) or still kept (queue): either way the answer says what persists since when.
    const third = await compare(server, r3, r2);
    // escola-c sent no file in round 3: listed apart, not judged.
    expect(third.total).toEqual({ resolvidas: 1, persistentes: 2, novas: 0, pendentes: 1, grafia: 1 });
    const since = third.comparacao.filter((l) => l.situacao === 'persistente');
    if (mode === 'embedded') {
      expect(third.fonte).toBe('safra');
      expect(Object.fromEntries(since.map((l) => [l.referencia, l.persistente_desde]))).toEqual({
        'escola-a/retorno.json': 1,
        'escola-b/retorno.json': 1,
      });
    }
    const fromRound1 = await compare(server, r3, r1);
    expect(fromRound1.fonte).toBe('safra');
    expect(fromRound1.total).toEqual({ resolvidas: 1, persistentes: 2, novas: 0, pendentes: 1, grafia: 1 });

    // No person in clear in any column of any row the season left (codes, sent and Receita values).
    const personal = ROUNDS.flatMap((round) =>
      Object.values(round).flatMap((linhas) => linhas.flatMap(([codigo, , conteudo]) => [codigo, ...conteudo.split(' -- ')])),
    );
    for (const table of ['arquivos', 'divergencias']) {
      const text = JSON.stringify(await safras.at(-1)!.ledger.db.query(`SELECT * FROM safra.${table}`));
      for (const value of personal) expect(text.includes(value), `${table} holds ${value}`).toBe(false);
    }

    // The season: three rounds, each school's counts per round, what is open and since when, the next deadline.
    const season = (await request(server, 'GET', '/api/safras/2025')).json() as unknown as SeasonAnswer;
    expect(season.rodadas.map((r) => [r.rodada, r.escolas, r.divergencias, r.escolas_sem_divergencias])).toEqual([
      [1, 2, 3, 0],
      [2, 3, 4, 0],
      [3, 2, 2, 0],
    ]);
    const byEscola = Object.fromEntries(season.escolas.map((e) => [e.escola, e]));
    // escola-a's one open divergence is grafia: open, and nothing pending.
    expect(byEscola['escola-a/retorno.json']).toMatchObject({
      por_rodada: [2, 1, 1],
      abertas: 1,
      abertas_desde: 1,
      ultima_rodada: 3,
      pendentes: 0,
    });
    expect(byEscola['escola-b/retorno.json']).toMatchObject({ pendentes: 1 });
    expect(byEscola['escola-b/retorno.json']).toMatchObject({ por_rodada: [1, 2, 1], abertas: 1, abertas_desde: 1 });
    expect(byEscola['escola-c/retorno.json']).toMatchObject({
      por_rodada: [null, 1, null],
      abertas: 1,
      abertas_desde: 2,
      ultima_rodada: 2,
    });
    // 7 July 2025: the first stage ends on 6 August (Portaria MEC nº 450/2025, extended).
    expect(season.prazo).toMatchObject({ etapa: 'matricula_inicial', fim: '2025-08-06', dias: 30 });
    // The batch's summary says the days to the deadline too (json; csv and xlsx keep their shape).
    const resumo = (await request(server, 'GET', `/api/lotes/${r3}/resumo`)).json() as { resumo: unknown[]; prazo: unknown };
    expect(resumo.resumo).toHaveLength(2);
    expect(resumo.prazo).toMatchObject({ etapa: 'matricula_inicial', fim: '2025-08-06', dias: 30 });

    // The metrics an alert reads: schools with something to fix, and the days left.
    const registry = (server.app as unknown as { metrics: { registry: MetricsRegistry } }).metrics.registry;
    const metric = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
    // escola-b and escola-c: escola-a's latest file holds a grafia divergence only.
    expect(await metric('censo_safra_escolas_com_pendencias')).toBe(2);
    expect(await metric('censo_safra_dias_ate_prazo')).toBe(30);
    const csv = (await request(server, 'GET', '/api/safras/2025?format=csv')).bytes.toString('utf8').split('\r\n');
    expect(csv[0]).toBe(
      'escola,referencia,rodada_1,rodada_2,rodada_3,abertas,abertas_desde,pendentes,' +
        'correcao_arquivo,correcao_educacenso,correcao_formulario,correcao_receita,correcao_grafia',
    );
    expect((await request(server, 'GET', '/api/safras/2025?format=xlsx')).status).toBe(200);
    for (const ano of ['25', '2025x', '%00']) {
      const bad = await request(server, 'GET', `/api/safras/${ano}`);
      expect(bad.status).toBe(400);
      expect(bad.json()).toEqual({ erro: 'Ano inválido: use quatro dígitos, como 2025.' });
    }
    expect(((await request(server, 'GET', '/api/safras/2024')).json() as unknown as SeasonAnswer).rodadas).toEqual([]);

    // Another principal never reaches the owner's rounds; *Apagar* on an expired round removes its rows.
    const deleted = await request(server, 'DELETE', `/api/lotes/${r1}`);
    expect(deleted.status).toBe(204);
    const gone = await request(server, 'GET', `/api/lotes/${r3}/comparacao?anterior=${r1}`);
    expect(gone.status).toBe(404);
  }, 180_000);
});
