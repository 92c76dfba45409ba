// Issue 50 on the service: GET /api/lotes/{id}/comparacao pairs a school whose file was renamed by
// its folder, says a school's round-2 file failed and why, answers 404 `Lote não encontrado.` for
// an `anterior` that is not an id as for an unknown one, writes the counts of every summary sheet
// as numbers (filtered, header frozen), and refuses a comparison beyond its bound (422) without
// holding anything after it.
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bytesDeComparacoesEmAndamento,
  COMPARACAO_MAX_BYTES,
  comparacaoLimite,
  comparacoesEmAndamento,
} from '../../services/api/dist/routes/tarefas/resumo.js';
import { formWith } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import { request, startHarness, waitForTarefa, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { CPF, retorno } from '../helpers/retorno-linhas.js';

const BROKEN = 'Arquivo retorno ilegível: não é um JSON válido.';

/** Each round: referencia (the file's path, as `censo lote --servidor` sends it) → the file's text. */
const ROUNDS: ReadonlyArray<Readonly<Record<string, string>>> = [
  {
    'escola-a/retorno.json': retorno([
      ['A1', CPF, '11111111111 -- 11111111122'],
      ['A2', 'Nome completo', 'MARIA -- MARIA SILVA'],
    ]),
    'escola-b/retorno.json': retorno([['B1', CPF, '22222222222 -- 22222222233']]),
    'escola-c/retorno.json': retorno([['C1', CPF, '33333333333 -- 33333333344']]),
  },
  {
    'escola-a/retorno-2a-rodada.json': retorno([['A1', CPF, '11111111111 -- 11111111199']]),
    'escola-b/retorno.json': retorno([]),
    'escola-c/retorno.json': '{ quebrado',
  },
];

const redis = useTestRedis();
let server: Harness;
const lotes: string[] = [];

beforeAll(async () => {
  server = await startHarness('embedded', { redisUrl: redis.url });
  for (const round of ROUNDS) {
    const lote = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
      .id as string;
    for (const [referencia, content] of Object.entries(round)) {
      const body = await formWith([{ field: 'retorno', content, filename: referencia.split('/').pop()! }], { referencia });
      await waitForTarefa(server, (await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body })).json().id as string);
    }
    await request(server, 'POST', `/api/lotes/${lote}/fechar`);
    await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', { what: 'the batch' });
    lotes.push(lote);
  }
});
afterAll(async () => {
  comparacaoLimite.divergencias = 400_000;
  comparacaoLimite.bytes = COMPARACAO_MAX_BYTES;
  await server?.dispose();
});

/** A closed, concluded batch of one school's return (its text), for the bounds' own rounds. */
async function loteDe(content: string): Promise<string> {
  const lote = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
    .id as string;
  const body = await formWith([{ field: 'retorno', content, filename: 'retorno.json' }], { referencia: 'escola-gorda/retorno.json' });
  await waitForTarefa(server, (await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body })).json().id as string);
  await request(server, 'POST', `/api/lotes/${lote}/fechar`);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', { what: 'the batch' });
  return lote;
}

const comparacao = (format = 'json', anterior = lotes[0]) =>
  request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao?anterior=${anterior}&format=${format}`);

async function workbook(bytes: Buffer): Promise<ExcelJS.Workbook> {
  const book = new ExcelJS.Workbook();
  await book.xlsx.load(bytes as unknown as ExcelJS.Buffer);
  return book;
}

function expectFilteredAndFrozen(sheet: ExcelJS.Worksheet): void {
  expect(sheet.autoFilter, sheet.name).toBe(`A1:${sheet.getColumn(sheet.columnCount).letter}${sheet.rowCount}`);
  expect(sheet.views[0], sheet.name).toMatchObject({ state: 'frozen', ySplit: 1 });
}

describe('the comparison pairs rounds by the school', () => {
  it('a renamed file is paired by its folder; a resolved school is compared; a failed round-2 file is named with its erro', async () => {
    const answer = await comparacao();
    expect(answer.status).toBe(200);
    expect(answer.bytes.toString('utf8').endsWith('}\n')).toBe(true);
    const body = answer.json() as { resumo: unknown[]; total: unknown; referencias_sem_par: unknown[] };
    expect(body.resumo).toEqual([
      {
        referencia: 'escola-a/retorno-2a-rodada.json',
        referencia_anterior: 'escola-a/retorno.json',
        resolvidas: 1,
        persistentes: 1,
        novas: 0,
        pendentes: 1,
        grafia: 0,
      },
      { referencia: 'escola-b/retorno.json', resolvidas: 1, persistentes: 0, novas: 0, pendentes: 0, grafia: 0 },
    ]);
    expect(body.total).toEqual({ resolvidas: 2, persistentes: 1, novas: 0, pendentes: 1, grafia: 0 });
    expect(body.referencias_sem_par).toEqual([{ referencia: 'escola-c/retorno.json', rodada: 'anterior', motivo: 'falhou', erro: BROKEN }]);
  });

  it('an anterior that is not an id is as unknown as an unknown id: 404 Lote não encontrado.', async () => {
    for (const anterior of ['nao-e-um-id', '00000000-0000-4000-8000-000000000000']) {
      const answer = await comparacao('json', anterior);
      expect([answer.status, answer.json()], anterior).toEqual([404, { erro: 'Lote não encontrado.' }]);
    }
    const missing = await request(server, 'GET', `/api/lotes/${lotes[1]}/comparacao`);
    expect(missing.status).toBe(400);
  });
});

describe('summary sheets hold numbers', () => {
  it('/comparacao xlsx: the counts are numeric cells, the rows text; sheet `sem par`; every sheet filtered and frozen', async () => {
    const book = await workbook((await comparacao('xlsx')).bytes);
    expect(book.worksheets.map((sheet) => sheet.name)).toEqual(['comparacao', 'resumo', 'sem par']);
    for (const sheet of book.worksheets) expectFilteredAndFrozen(sheet);
    const resumo = book.getWorksheet('resumo')!;
    for (let row = 2; row <= resumo.rowCount; row++) {
      for (const column of [2, 3, 4, 5, 6]) expect(resumo.getRow(row).getCell(column).type).toBe(ExcelJS.ValueType.Number);
    }
    expect([1, 2, 3, 4, 5, 6].map((column) => resumo.getRow(resumo.rowCount).getCell(column).value)).toEqual(['Total', 2, 1, 0, 1, 0]);
    expect(book.getWorksheet('sem par')!.getRow(2).getCell(3).value).toBe(`o arquivo da rodada atual falhou: ${BROKEN}`);
  });

  it('/resumo xlsx: every count a number (the total sums them), the school text', async () => {
    const answer = await request(server, 'GET', `/api/lotes/${lotes[0]}/resumo?format=xlsx`);
    const sheet = (await workbook(answer.bytes)).getWorksheet('resumo')!;
    expectFilteredAndFrozen(sheet);
    expect(sheet.getRow(2).getCell(1).type).toBe(ExcelJS.ValueType.String);
    for (let row = 2; row <= sheet.rowCount; row++) {
      for (let column = 2; column <= 11; column++) expect(sheet.getRow(row).getCell(column).type).toBe(ExcelJS.ValueType.Number);
    }
    expect([1, 2, 3, 4, 5].map((column) => sheet.getRow(5).getCell(column).value)).toEqual(['Total', 3, 0, 4, 3]);
  });
});

describe('the comparison is bounded', () => {
  it('beyond the bound: 422 with a Portuguese erro, before any divergence is read; nothing held after any answer', async () => {
    comparacaoLimite.divergencias = 4;
    try {
      const answer = await comparacao();
      expect(answer.status).toBe(422);
      expect(answer.json()).toEqual({
        erro: 'Comparação grande demais: 5 divergências nas duas rodadas, o limite é 4. Compare por partes (lotes menores) ou use o censo comparar.',
      });
      comparacaoLimite.divergencias = 5;
      expect((await comparacao()).status).toBe(200);
      await waitFor(async () => comparacoesEmAndamento() === 0, { what: 'the comparison to let go' });
    } finally {
      comparacaoLimite.divergencias = 400_000;
    }
  });
});

describe('the comparison is bounded in bytes, not only in divergences (issue 59)', () => {
  // The attacker's shape: few divergences, each with a 30,000-character school code and values of
  // ~16,000 characters. A count of divergences lets them through; the rounds' bytes do not.
  const fat = (seed: string): string =>
    retorno(
      Array.from({ length: 12 }, (_, i): [string, string, string] => [
        `${seed}${i}`.padEnd(30_000, 'X'),
        'Nome completo',
        `${'A'.repeat(16_000)} -- ${'B'.repeat(16_000)}${seed}${i}`,
      ]),
    );

  it('one comparison beyond the bytes: 422 in words; four at once never hold more than the bound', async () => {
    const [antes, depois] = [await loteDe(fat('R1-')), await loteDe(fat('R2-'))];
    const compare = () => request(server, 'GET', `/api/lotes/${depois}/comparacao?anterior=${antes}&format=json`);
    // Both rounds' stored results, as the bound counts them.
    comparacaoLimite.bytes = 1024;
    try {
      const refused = await compare();
      expect(refused.status).toBe(422);
      expect(refused.json().erro).toMatch(
        /^Comparação grande demais: \d+(,\d)? MiB de resultados nas duas rodadas, o limite é 0 MiB\. Compare por partes \(lotes menores\) ou use o censo comparar\.$/,
      );
      expect(comparacoesEmAndamento()).toBe(0);

      // Room for one comparison at a time: of four at once, each either answers or waits (503),
      // and what the process holds never passes the bound.
      const one = (await (async () => {
        comparacaoLimite.bytes = COMPARACAO_MAX_BYTES;
        const answer = await compare();
        expect(answer.status).toBe(200);
        return answer.bytes.length;
      })()) as number;
      expect(one).toBeGreaterThan(24 * 30_000);
      await waitFor(async () => bytesDeComparacoesEmAndamento() === 0, { what: 'the comparison to let go' });
      const held: number[] = [];
      const watch = setInterval(() => held.push(bytesDeComparacoesEmAndamento()), 1);
      comparacaoLimite.bytes = Math.ceil(one * 1.5);
      const answers = await Promise.all([compare(), compare(), compare(), compare()]).finally(() => clearInterval(watch));
      const statuses = answers.map((answer) => answer.status).sort();
      expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
      expect(statuses).toContain(200);
      for (const answer of answers.filter((a) => a.status === 503)) {
        expect(answer.json()).toEqual({ erro: 'Comparações demais em andamento, tente novamente em instantes.' });
      }
      expect(Math.max(0, ...held)).toBeLessThanOrEqual(comparacaoLimite.bytes);
      await waitFor(async () => bytesDeComparacoesEmAndamento() === 0 && comparacoesEmAndamento() === 0, {
        what: 'every comparison to let go',
      });
    } finally {
      comparacaoLimite.bytes = COMPARACAO_MAX_BYTES;
    }
  });
});
