// Issue 50, the analysts' items on the CLI: two rounds of the same folders compared with `censo
// comparar` — a school whose file was renamed is still compared (paired by its folder), one whose
// round-2 file failed is named with the failure, one that resolved everything counts as resolved
// (the outputs of `censo lote` list every file read) — and named in the terminal, the JSON and the
// workbook; `--dado`; `censo resumo`; numbers, autofilters and frozen headers in every summary
// sheet; the JSON ending its line; the project's own outputs in a school folder passed over.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { censo } from './censo-process.js';
import { CPF, retorno, type Linha, NOME } from '../helpers/retorno-linhas.js';

const NINE: Linha[] = Array.from({ length: 9 }, (_, i) => [`B${i}`, CPF, `1000000000${i} -- 2000000000${i}`]);
const BROKEN = 'Arquivo retorno ilegível: não é um JSON válido.';

/** Round 1 and round 2 of the same schools, as issue 50 found them. */
const ROUNDS: ReadonlyArray<Readonly<Record<string, readonly Linha[] | null>>> = [
  {
    'escola-a/retorno.json': [
      ['A1', CPF, '11111111111 -- 11111111122'],
      ['A2', NOME, 'MARIA -- MARIA SILVA'],
    ],
    'escola-b/retorno.json': NINE,
    'escola-c/retorno.json': [['C1', CPF, '33333333333 -- 33333333344']],
    'escola-d/retorno.json': [],
  },
  {
    // Renamed between rounds (INEP's new file), the same folder.
    'escola-a/retorno-2a-rodada.json': [['A1', CPF, '11111111111 -- 11111111199']],
    // Every divergence resolved: no row in the combined output.
    'escola-b/retorno.json': [],
    // Its round-2 file failed.
    'escola-c/retorno.json': null,
    // Clean before, a new CPF divergence now.
    'escola-d/retorno.json': [['D1', CPF, '44444444444 -- 44444444455']],
  },
];

let work: string;
const folders: string[] = [];
const results: Record<'json' | 'xlsx' | 'csv', string[]> = { json: [], xlsx: [], csv: [] };

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-comparar-rodadas-'));
  for (const [i, round] of ROUNDS.entries()) {
    const folder = path.join(work, `rodada-${i + 1}`);
    folders.push(folder);
    for (const [name, linhas] of Object.entries(round)) {
      await mkdir(path.dirname(path.join(folder, name)), { recursive: true });
      await writeFile(path.join(folder, name), linhas === null ? '{ quebrado' : retorno(linhas));
    }
    for (const format of ['json', 'xlsx', 'csv'] as const) {
      const result = path.join(work, `rodada-${i + 1}.${format}`);
      const run = await censo(['lote', folder, '-o', result, '--quiet']);
      expect(run.code, run.stderr).toBe(i === 0 ? 0 : 1);
      results[format].push(result);
    }
  }
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

interface Comparacao {
  comparacao: Array<Record<string, unknown>>;
  resumo: Array<Record<string, unknown>>;
  total: Record<string, number>;
  referencias_sem_par: Array<Record<string, unknown>>;
}

const EXPECTED_RESUMO = [
  {
    referencia: 'escola-a/retorno-2a-rodada.json',
    referencia_anterior: 'escola-a/retorno.json',
    resolvidas: 1,
    persistentes: 1,
    novas: 0,
    pendentes: 1,
    grafia: 0,
  },
  { referencia: 'escola-b/retorno.json', resolvidas: 9, persistentes: 0, novas: 0, pendentes: 0, grafia: 0 },
  { referencia: 'escola-d/retorno.json', resolvidas: 0, persistentes: 0, novas: 1, pendentes: 1, grafia: 0 },
];
const EXPECTED_SEM_PAR = [{ referencia: 'escola-c/retorno.json', rodada: 'anterior', motivo: 'falhou', erro: BROKEN }];

async function workbook(file: string | Buffer): Promise<ExcelJS.Workbook> {
  const book = new ExcelJS.Workbook();
  await book.xlsx.load((typeof file === 'string' ? await readFile(file) : file) as unknown as ExcelJS.Buffer);
  return book;
}

/** A sheet the project writes: an autofilter over its header and every row, the header row frozen. */
function expectFilteredAndFrozen(sheet: ExcelJS.Worksheet): void {
  expect(sheet.autoFilter, sheet.name).toBe(`A1:${sheet.getColumn(sheet.columnCount).letter}${sheet.rowCount}`);
  expect(sheet.views[0], sheet.name).toMatchObject({ state: 'frozen', ySplit: 1 });
}

describe('censo comparar pairs rounds by the school', () => {
  it('a renamed file is compared (paired by its folder), a resolved school counts 9, a clean one 1 new, the failed one named with why', async () => {
    const run = await censo(['comparar', results.json[0]!, results.json[1]!]);
    expect(run.code, run.stderr).toBe(0);
    const body = JSON.parse(run.stdout.toString('utf8')) as Comparacao;
    expect(body.resumo).toEqual(EXPECTED_RESUMO);
    expect(body.total).toEqual({ resolvidas: 10, persistentes: 1, novas: 1, pendentes: 2, grafia: 0 });
    expect(body.referencias_sem_par).toEqual(EXPECTED_SEM_PAR);
    // The terminal names what was paired by folder and what was not compared, and why.
    expect(run.stderr).toBe(
      'Resolvidas: 10; persistentes: 1; novas: 1 (pendentes: 2; só grafia: 0); escolas em só uma rodada (não comparadas): 1\n' +
        'Pareadas pela pasta (arquivo renomeado): "escola-a/retorno.json" → "escola-a/retorno-2a-rodada.json".\n' +
        `Não comparada: "escola-c/retorno.json" (só na rodada anterior: o arquivo da rodada atual falhou: ${BROKEN.slice(0, -1)}).\n`,
    );
  });

  it('the JSON on stdout ends its line, so the summary after it starts on its own', async () => {
    const run = await censo(['comparar', results.json[0]!, results.json[1]!]);
    expect(run.stdout.toString('utf8').endsWith('}\n')).toBe(true);
  });

  it('the same from the workbooks: rows, counts and the sheet `sem par`; counts are numbers, every sheet filtered and frozen', async () => {
    const saida = path.join(work, 'comparacao.xlsx');
    const run = await censo(['comparar', results.xlsx[0]!, results.xlsx[1]!, '-o', saida]);
    expect(run.code, run.stderr).toBe(0);
    const book = await workbook(saida);
    expect(book.worksheets.map((sheet) => sheet.name)).toEqual(['comparacao', 'resumo', 'sem par']);
    for (const sheet of book.worksheets) expectFilteredAndFrozen(sheet);
    const resumo = book.getWorksheet('resumo')!;
    expect(resumo.getRow(1).values).toEqual([
      undefined,
      'Referência',
      'Resolvidas',
      'Persistentes',
      'Novas',
      'Pendentes',
      'Só grafia',
      'Referência na rodada anterior',
    ]);
    expect([1, 2, 3, 4, 5, 6].map((column) => resumo.getRow(3).getCell(column).value)).toEqual(['escola-b/retorno.json', 9, 0, 0, 0, 0]);
    expect(resumo.getRow(2).getCell(7).value).toBe('escola-a/retorno.json');
    for (let row = 2; row <= resumo.rowCount; row++) {
      for (const column of [2, 3, 4, 5, 6]) expect(resumo.getRow(row).getCell(column).type).toBe(ExcelJS.ValueType.Number);
    }
    // The total row adds up the schools': the counts can be summed.
    const total = resumo.getRow(resumo.rowCount);
    expect(total.getCell(1).value).toBe('Total');
    let resolvidas = 0;
    for (let row = 2; row < resumo.rowCount; row++) resolvidas += resumo.getRow(row).getCell(2).value as number;
    expect(total.getCell(2).value).toBe(resolvidas);
    const semPar = book.getWorksheet('sem par')!;
    expect(semPar.getRow(2).values).toEqual([
      undefined,
      'escola-c/retorno.json',
      'Só na rodada anterior',
      `o arquivo da rodada atual falhou: ${BROKEN}`,
    ]);
    // The comparison's own rows stay text (codes, values), as every answer of SPEC §3.5.
    const rows = book.getWorksheet('comparacao')!;
    for (let row = 2; row <= rows.rowCount; row++) {
      rows.getRow(row).eachCell((cell) => expect(cell.type).toBe(ExcelJS.ValueType.String));
    }
  });

  it('CSVs list no files: comparing them says so on stderr (a school without divergences counts as absent)', async () => {
    const run = await censo(['comparar', results.csv[0]!, results.csv[1]!, '-o', path.join(work, 'c.json')]);
    expect(run.code, run.stderr).toBe(0);
    for (const file of results.csv) {
      expect(run.stderr).toContain(`censo: "${file}" não lista os arquivos lidos (só o .json e o .xlsx do censo lote listam)`);
    }
  });

  it('--dado cpf compares only CPF divergences; a word that is not a dado is wrong usage (exit 2)', async () => {
    const run = await censo(['comparar', results.json[0]!, results.json[1]!, '--dado', 'cpf']);
    expect(run.code, run.stderr).toBe(0);
    const body = JSON.parse(run.stdout.toString('utf8')) as Comparacao;
    expect(body.comparacao.every((row) => row.chave === 'cpf')).toBe(true);
    expect(body.total).toEqual({ resolvidas: 9, persistentes: 1, novas: 1, pendentes: 2, grafia: 0 });
    const wrong = await censo(['comparar', results.json[0]!, results.json[1]!, '--dado', 'cpf,telefone']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--dado "cpf,telefone": use um ou mais destes, separados por vírgula: cpf, nome');
  });
});

describe('censo lote lists every file; censo resumo counts per school', () => {
  it('the JSON carries `arquivos`: every file read with its count (0 included), every failed one with its erro', async () => {
    const body = JSON.parse(await readFile(results.json[1]!, 'utf8')) as { arquivos: unknown[] };
    expect(body.arquivos).toEqual([
      { arquivo: 'escola-a/retorno-2a-rodada.json', divergencias: 1, erro: null },
      { arquivo: 'escola-b/retorno.json', divergencias: 0, erro: null },
      { arquivo: 'escola-c/retorno.json', divergencias: null, erro: BROKEN },
      { arquivo: 'escola-d/retorno.json', divergencias: 1, erro: null },
    ]);
  });

  it('the workbook has the sheet `arquivos`, its counts numbers; both sheets filtered and frozen', async () => {
    const book = await workbook(results.xlsx[1]!);
    expect(book.worksheets.map((sheet) => sheet.name)).toEqual(['divergencias', 'arquivos']);
    for (const sheet of book.worksheets) expectFilteredAndFrozen(sheet);
    const arquivos = book.getWorksheet('arquivos')!;
    expect(arquivos.getRow(1).values).toEqual([undefined, 'Arquivo', 'Divergências', 'Falha']);
    const cells = (row: number) => [1, 2, 3].map((column) => arquivos.getRow(row).getCell(column).value ?? '');
    expect(cells(3)).toEqual(['escola-b/retorno.json', 0, '']);
    expect(arquivos.getRow(3).getCell(2).type).toBe(ExcelJS.ValueType.Number);
    expect(cells(4)).toEqual(['escola-c/retorno.json', '', BROKEN]);
  });

  it('--dado cpf on lote writes only CPF divergences', async () => {
    const run = await censo(['lote', folders[0]!, '--dado', 'cpf', '--quiet']);
    expect(run.code, run.stderr).toBe(0);
    const body = JSON.parse(run.stdout.toString('utf8')) as { divergencias: Array<{ chave: string }>; arquivos: unknown[] };
    expect(body.divergencias.map((d) => d.chave)).toEqual(Array(11).fill('cpf'));
    expect(body.arquivos).toContainEqual({ arquivo: 'escola-a/retorno.json', divergencias: 1, erro: null });
  });

  it('censo resumo: per school, files, failures, divergences and one count per dado, and the total; as the service answers /resumo', async () => {
    const run = await censo(['resumo', results.json[1]!]);
    expect(run.code, run.stderr).toBe(0);
    const zeros = {
      cpf: 0,
      nome: 0,
      data_nascimento: 0,
      inep: 0,
      nome_mae: 0,
      nome_pai: 0,
      outro: 0,
      correcao_arquivo: 0,
      correcao_educacenso: 0,
      correcao_formulario: 0,
      correcao_receita: 0,
      correcao_grafia: 0,
    };
    // Every CPF here was sent: Educacenso does not change it by migration (formulario, SPEC §11).
    expect(JSON.parse(run.stdout.toString('utf8'))).toEqual({
      resumo: [
        {
          referencia: 'escola-a/retorno-2a-rodada.json',
          arquivos: 1,
          falhas: 0,
          divergencias: 1,
          ...zeros,
          cpf: 1,
          correcao_formulario: 1,
        },
        { referencia: 'escola-b/retorno.json', arquivos: 1, falhas: 0, divergencias: 0, ...zeros },
        { referencia: 'escola-c/retorno.json', arquivos: 1, falhas: 1, divergencias: 0, ...zeros },
        { referencia: 'escola-d/retorno.json', arquivos: 1, falhas: 0, divergencias: 1, ...zeros, cpf: 1, correcao_formulario: 1 },
      ],
      total: { arquivos: 4, falhas: 1, divergencias: 2, ...zeros, cpf: 2, correcao_formulario: 2 },
    });
    const csv = await censo(['resumo', results.xlsx[0]!, '--format', 'csv']);
    expect(csv.stdout.toString('utf8').split('\r\n')).toEqual([
      'referencia,arquivos,falhas,divergencias,cpf,nome,data_nascimento,inep,nome_mae,nome_pai,outro,' +
        'correcao_arquivo,correcao_educacenso,correcao_formulario,correcao_receita,correcao_grafia',
      // Read back from the workbook's words (Como corrigir): the name is the file's to fix, the CPFs the form's.
      'escola-a/retorno.json,1,0,2,1,1,0,0,0,0,0,1,0,1,0,0',
      'escola-b/retorno.json,1,0,9,9,0,0,0,0,0,0,0,0,9,0,0',
      'escola-c/retorno.json,1,0,1,1,0,0,0,0,0,0,0,0,1,0,0',
      'escola-d/retorno.json,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0',
      'Total,4,0,12,11,1,0,0,0,0,0,1,0,11,0,0',
      '',
    ]);
    const saida = path.join(work, 'resumo.xlsx');
    expect((await censo(['resumo', results.json[0]!, '-o', saida])).code).toBe(0);
    const sheet = (await workbook(saida)).getWorksheet('resumo')!;
    expectFilteredAndFrozen(sheet);
    expect(sheet.getRow(6).values).toEqual([undefined, 'Total', 4, 0, 12, 11, 1, 0, 0, 0, 0, 0, 1, 0, 11, 0, 0]);
    for (let column = 2; column <= 16; column++) expect(sheet.getRow(2).getCell(column).type).toBe(ExcelJS.ValueType.Number);
  });
});

describe("the project's own outputs in a school folder are not returns", () => {
  it('censo divergencias/retorno-rf/comparar/resumo outputs (json, xlsx) saved among the returns are passed over with a note, not failed', async () => {
    const folder = path.join(work, 'com-saidas');
    await mkdir(path.join(folder, 'escola-a'), { recursive: true });
    const source = path.join(folders[0]!, 'escola-a', 'retorno.json');
    await writeFile(path.join(folder, 'escola-a', 'retorno.json'), await readFile(source));
    const outputs = [
      ['divergencias', source, '-o', path.join(folder, 'escola-a', 'divergencias.json')],
      ['divergencias', source, '-o', path.join(folder, 'escola-a', 'divergencias.xlsx')],
      ['comparar', results.json[0]!, results.json[1]!, '-o', path.join(folder, 'comparacao.json')],
      ['comparar', results.json[0]!, results.json[1]!, '-o', path.join(folder, 'comparacao.xlsx')],
      ['resumo', results.json[0]!, '-o', path.join(folder, 'resumo.json')],
      ['resumo', results.json[0]!, '-o', path.join(folder, 'resumo.xlsx')],
    ];
    for (const args of outputs) expect((await censo(['--quiet', ...args])).code).toBe(0);
    const run = await censo(['lote', folder, '-o', path.join(work, 'com-saidas.json')]);
    expect(run.stderr).not.toContain('cabeçalho');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/^Retornos: 1 \(1 lidos, 0 com falha\); ignorados: 6; /);
    for (const name of ['escola-a/divergencias.json', 'escola-a/divergencias.xlsx', 'comparacao.json', 'resumo.xlsx']) {
      expect(run.stderr).toContain(`"${name}" (resultado do censo, não é um retorno)`);
    }
  });
});
