// SPEC §10, a state's progress, in embedded and queue mode: two census rounds as two batches —
// resolved, persistent and new divergences, a failed file, schools present in one round only —
// summarised and compared by the service, checked against counts this test computes itself from
// the batches' own rows; then `censo comparar` on the two rounds' `censo lote` results, which
// must give the route's answer byte for byte, in every format.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formWith } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, waitForTarefa, workbookSheets, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { censo } from '../cli/censo-process.js';
import { CPF, retorno, type Linha } from '../helpers/retorno-linhas.js';

/** Each round: school (its file's path, also its referencia) → its return (null: an unreadable file). */
const ROUNDS: ReadonlyArray<Readonly<Record<string, readonly Linha[] | null>>> = [
  {
    'escola-a/retorno.json': [
      ['ALU1', CPF, '11111111111 -- 11111111122'],
      ['ALU2', 'Nome completo', 'MARIA SILVA -- MARIA DA SILVA'],
      ['ALU3', 'Data de nascimento', '01/01/2010 -- 02/01/2010'],
    ],
    'escola-b/retorno.json': [
      ['ALU10', CPF, '22222222222 -- 22222222233'],
      ['ALU11', 'Filiação 1', 'ANA -- ANA LIMA'],
      ['ALU12', 'Cor/Raça', 'parda -- preta'],
    ],
    'escola-c/retorno.json': [['ALU20', CPF, '33333333333 -- 33333333344']],
    'escola-e/retorno.json': null,
  },
  {
    'escola-a/retorno.json': [
      ['ALU1', CPF, '11111111111 -- 11111111199'],
      ['ALU4', 'Identificação única (Inep)', '123 -- 123456789012'],
    ],
    'escola-b/retorno.json': [['ALU12', 'Cor/Raça', 'parda -- indígena']],
    'escola-d/retorno.json': [['ALU40', 'Nome completo', 'JOAO -- JOÃO PEREIRA']],
    'escola-e/retorno.json': [['ALU30', CPF, '44444444444 -- 44444444455']],
  },
];

interface Row {
  referencia: string;
  codigo_na_escola: string;
  campo: string;
  enviado: string;
  correto: string;
  chave: string | null;
  correcao: string;
}

const KINDS = [
  'cpf',
  'nome',
  'data_nascimento',
  'inep',
  'nome_mae',
  'nome_pai',
  'outro',
  // How each gets fixed (SPEC §11): every divergence of the batch has one.
  'correcao_arquivo',
  'correcao_educacenso',
  'correcao_formulario',
  'correcao_receita',
  'correcao_grafia',
];

/** The summary, counted here from the batch's tasks and rows (not by the service's code). */
function expectedResumo(tasks: Array<{ referencia: string; estado: string }>, rows: Row[]) {
  const linhas = new Map<string, Record<string, number | string>>();
  const linha = (referencia: string) => {
    if (!linhas.has(referencia))
      linhas.set(referencia, { referencia, arquivos: 0, falhas: 0, divergencias: 0, ...Object.fromEntries(KINDS.map((k) => [k, 0])) });
    return linhas.get(referencia)!;
  };
  for (const task of tasks) {
    const l = linha(task.referencia);
    (l.arquivos as number)++;
    if (task.estado === 'falhou') (l.falhas as number)++;
  }
  for (const row of rows) {
    const l = linha(row.referencia);
    (l.divergencias as number)++;
    (l[row.chave ?? 'outro'] as number)++;
    (l[`correcao_${row.correcao}`] as number)++;
  }
  const total: Record<string, number> = { arquivos: 0, falhas: 0, divergencias: 0, ...Object.fromEntries(KINDS.map((k) => [k, 0])) };
  for (const l of linhas.values()) for (const key of Object.keys(total)) total[key]! += l[key] as number;
  return { resumo: [...linhas.values()], total };
}

/** The judgment, counted here: a key is (referencia, codigo, chave or campo); present = a file read in the round. */
function expectedCounts(
  before: { rows: Row[]; read: Set<string>; failed: Map<string, string> },
  after: { rows: Row[]; read: Set<string>; failed: Map<string, string> },
) {
  const key = (r: Row) => `${r.codigo_na_escola}|${r.chave ?? `campo:${r.campo}`}`;
  const keysOf = (rows: Row[], referencia: string) => new Set(rows.filter((r) => r.referencia === referencia).map(key));
  const resumo: Array<Record<string, number | string>> = [];
  for (const referencia of after.read) {
    if (!before.read.has(referencia)) continue;
    const earlier = keysOf(before.rows, referencia);
    const later = keysOf(after.rows, referencia);
    resumo.push({
      referencia,
      resolvidas: [...earlier].filter((k) => !later.has(k)).length,
      persistentes: [...earlier].filter((k) => later.has(k)).length,
      novas: [...later].filter((k) => !earlier.has(k)).length,
      // Everything the later round holds, split by whether someone must act (issue 56).
      pendentes: after.rows.filter((r) => r.referencia === referencia && r.correcao !== 'grafia').length,
      grafia: after.rows.filter((r) => r.referencia === referencia && r.correcao === 'grafia').length,
    });
  }
  // Why each is apart (issue 50): the other round's file failed (with its erro), or there is none.
  const why = (other: { failed: Map<string, string> }, referencia: string) =>
    other.failed.has(referencia) ? { motivo: 'falhou', erro: other.failed.get(referencia) } : { motivo: 'sem_arquivo', erro: null };
  const semPar = [
    ...[...after.read]
      .filter((r) => !before.read.has(r))
      .map((referencia) => ({ referencia, rodada: 'atual', ...why(before, referencia) })),
    ...[...before.read]
      .filter((r) => !after.read.has(r))
      .map((referencia) => ({ referencia, rodada: 'anterior', ...why(after, referencia) })),
  ];
  return { resumo, semPar };
}

const redis = useTestRedis();
let work: string;
const folders: string[] = [];

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-progresso-'));
  for (const [i, round] of ROUNDS.entries()) {
    const folder = path.join(work, `rodada-${i + 1}`);
    folders.push(folder);
    for (const [name, linhas] of Object.entries(round)) {
      await mkdir(path.dirname(path.join(folder, name)), { recursive: true });
      await writeFile(path.join(folder, name), linhas === null ? '{ quebrado' : retorno(linhas));
    }
  }
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  const lotes: string[] = [];

  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
    for (const [i, round] of ROUNDS.entries()) {
      const lote = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
        .id as string;
      for (const name of Object.keys(round)) {
        const body = await formWith([{ field: 'retorno', path: path.join(folders[i]!, name), filename: path.basename(name) }], {
          referencia: name,
        });
        const task = (await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body })).json().id as string;
        await waitForTarefa(server, task);
      }
      await request(server, 'POST', `/api/lotes/${lote}/fechar`);
      await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', {
        what: 'the batch to end',
      });
      lotes.push(lote);
    }
  });
  afterAll(async () => {
    await server?.dispose();
  });

  async function roundOf(lote: string) {
    const rows = ((await request(server, 'GET', `/api/lotes/${lote}/divergencias`)).json() as { divergencias: Row[] }).divergencias;
    const tasks = (
      (await request(server, 'GET', `/api/lotes/${lote}/tarefas?limit=1000`)).json() as {
        tarefas: Array<{ referencia: string; estado: string; erro?: { erro: string } | null }>;
      }
    ).tarefas;
    const failed = new Map(tasks.filter((t) => t.estado === 'falhou').map((t) => [t.referencia, t.erro!.erro]));
    return { rows, tasks, read: new Set(tasks.filter((t) => t.estado === 'concluida').map((t) => t.referencia)), failed };
  }

  it('the summary: one row per school in file order, files, failures and divergences by kind, and the total', async () => {
    for (const lote of lotes) {
      const round = await roundOf(lote);
      const answer = await request(server, 'GET', `/api/lotes/${lote}/resumo`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('lote-tarefas-falhas')).toBe(lote === lotes[0] ? '1' : '0');
      expect(answer.json()).toEqual(expectedResumo(round.tasks, round.rows));
    }
    const csv = (await request(server, 'GET', `/api/lotes/${lotes[0]}/resumo?format=csv`)).bytes.toString('utf8');
    expect(csv.split('\r\n')).toEqual([
      'referencia,arquivos,falhas,divergencias,cpf,nome,data_nascimento,inep,nome_mae,nome_pai,outro,' +
        'correcao_arquivo,correcao_educacenso,correcao_formulario,correcao_receita,correcao_grafia',
      // The CPFs were sent (field 5 rule 10: formulario), the mother is the Receita's (receita).
      'escola-a/retorno.json,1,0,3,1,1,1,0,0,0,0,2,0,1,0,0',
      'escola-b/retorno.json,1,0,3,1,0,0,0,1,0,1,0,1,2,0,0',
      'escola-c/retorno.json,1,0,1,1,0,0,0,0,0,0,0,0,1,0,0',
      'escola-e/retorno.json,1,1,0,0,0,0,0,0,0,0,0,0,0,0,0',
      'Total,4,1,7,3,1,1,0,1,0,1,2,1,4,0,0',
      '',
    ]);
  });

  it('the comparison: each divergence resolvida, persistente or nova, counts per school, schools of one round apart', async () => {
    const [before, after] = [await roundOf(lotes[0]!), await roundOf(lotes[1]!)];
    const answer = await request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao?anterior=${lotes[0]}`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const body = answer.json() as {
      comparacao: Array<Record<string, unknown>>;
      resumo: Array<Record<string, unknown>>;
      total: Record<string, number>;
      referencias_sem_par: unknown[];
    };
    const expected = expectedCounts(before, after);
    expect(body.resumo).toEqual(expected.resumo);
    expect(body.referencias_sem_par).toEqual(expected.semPar);
    expect(body.total).toEqual({ resolvidas: 4, persistentes: 2, novas: 1, pendentes: 3, grafia: 0 });
    // The rows behind the counts, with each round's values.
    const a = body.comparacao.filter((row) => row.referencia === 'escola-a/retorno.json');
    expect(a).toEqual([
      {
        referencia: 'escola-a/retorno.json',
        codigo_na_escola: 'ALU1',
        chave: 'cpf',
        campo: CPF,
        situacao: 'persistente',
        enviado_anterior: '11111111111',
        correto_anterior: '11111111122',
        enviado_atual: '11111111111',
        correto_atual: '11111111199',
        // The later round's way of fixing (issue 56): a CPF as sent is fixed on Educacenso's form.
        correcao: 'formulario',
      },
      expect.objectContaining({ codigo_na_escola: 'ALU2', chave: 'nome', situacao: 'resolvida', enviado_atual: null, correto_atual: null }),
      expect.objectContaining({ codigo_na_escola: 'ALU3', chave: 'data_nascimento', situacao: 'resolvida' }),
      expect.objectContaining({
        codigo_na_escola: 'ALU4',
        chave: 'inep',
        situacao: 'nova',
        enviado_anterior: null,
        correto_atual: '123456789012',
      }),
    ]);
    // No row of a school that is in one round only.
    const judged = new Set(body.comparacao.map((row) => row.referencia));
    expect([...judged].sort()).toEqual(['escola-a/retorno.json', 'escola-b/retorno.json']);
  });

  it('refuses what it cannot answer: an unknown earlier batch (404), one not concluded (409), no anterior (400)', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const notFound = await request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao?anterior=${unknown}`);
    expect([notFound.status, notFound.json()]).toEqual([404, { erro: 'Lote não encontrado.' }]);
    const missing = await request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao`);
    expect([missing.status, missing.json()]).toEqual([
      400,
      { erro: 'Parâmetro anterior deve ser o id de outro lote (a rodada anterior).' },
    ]);
    const open = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
      .id as string;
    const notDone = await request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao?anterior=${open}`);
    expect([notDone.status, notDone.json()]).toEqual([409, { erro: 'Lote ainda não concluído.' }]);
    const resumo = await request(server, 'GET', `/api/lotes/${open}/resumo`);
    expect([resumo.status, resumo.json()]).toEqual([409, { erro: 'Lote ainda não concluído.' }]);
    expect((await request(server, 'GET', `/api/lotes/${open}/resumo?parcial=true`)).json()).toEqual({
      resumo: [],
      total: { arquivos: 0, falhas: 0, divergencias: 0, ...Object.fromEntries(KINDS.map((k) => [k, 0])) },
    });
  });

  it('censo comparar on the two rounds’ censo lote results (mixed formats) gives the route’s answer byte for byte', async () => {
    const out = await mkdtemp(path.join(work, `cli-${mode}-`));
    const results = [path.join(out, 'rodada-1.json'), path.join(out, 'rodada-2.xlsx')];
    for (const [i, result] of results.entries()) {
      const run = await censo(['lote', folders[i]!, '-o', result, '--quiet']);
      // The unreadable file of round 1 makes `lote` say so and exit 1; the result is written.
      expect(run.code, run.stderr).toBe(i === 0 ? 1 : 0);
    }
    for (const format of ['json', 'csv', 'xlsx']) {
      const saida = path.join(out, `comparacao.${format}`);
      const run = await censo(['comparar', results[0]!, results[1]!, '-o', saida]);
      expect(run.code, run.stderr).toBe(0);
      // Every school apart is named, with why (issue 50).
      expect(run.stderr).toBe(
        'Resolvidas: 4; persistentes: 2; novas: 1 (pendentes: 3; só grafia: 0); escolas em só uma rodada (não comparadas): 3\n' +
          'Não comparada: "escola-d/retorno.json" (só na rodada atual: sem arquivo na rodada anterior).\n' +
          'Não comparada: "escola-e/retorno.json" (só na rodada atual: o arquivo da rodada anterior falhou: Arquivo retorno ilegível: não é um JSON válido).\n' +
          'Não comparada: "escola-c/retorno.json" (só na rodada anterior: sem arquivo na rodada atual).\n',
      );
      const route = await request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao?anterior=${lotes[0]}&format=${format}`);
      const written = await readFile(saida);
      if (format === 'xlsx') {
        // The same workbook: every sheet, row and cell. Not the zip's bytes, which carry the
        // time each was written (its parts' DOS timestamps, two-second steps).
        expect(await workbookSheets(written)).toEqual(await workbookSheets(route.bytes));
        expect(written.length).toBe(route.bytes.length);
      } else expect(written.equals(route.bytes), format).toBe(true);
    }
  });
});
