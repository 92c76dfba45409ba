// The writers and readers behind the batches' combined answers (SPEC §7.3): the xlsx that goes on
// to further sheets past Excel's row limit, and the stored JSON answer read back one item at a
// time whatever the chunk boundaries.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonListChunks, XLSX_MAX_DATA_ROWS, xlsxStream } from '@censo/shared';
import { jsonListItems } from '@censo/api/testing';
import { workbookSheets } from '../helpers/tarefas.js';
import { onThisMachine } from '../helpers/deadline.js';

const run = promisify(execFile);
let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-tarefas-output-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function* rows(count: number): AsyncGenerator<string[]> {
  for (let i = 1; i <= count; i++) yield [`r${i}`, String(i % 2 === 0)];
}

describe('xlsxStream', () => {
  it.each([
    [0, [0]],
    [3, [3]],
    [6, [3, 3]],
    [7, [3, 3, 1]],
  ])('%i rows at 3 a sheet: sheets of %j rows, each with the header', async (count, perSheet) => {
    const bytes = await buffer(xlsxStream('divergencias', ['a', 'b'], rows(count), { maxRowsPerSheet: 3 }));
    const sheets = await workbookSheets(bytes);
    expect(sheets.map((s) => s.name)).toEqual(perSheet.map((_, i) => (i === 0 ? 'divergencias' : `divergencias ${i + 1}`)));
    expect(sheets.map((s) => s.rows.length - 1)).toEqual(perSheet);
    for (const sheet of sheets) expect(sheet.rows[0]).toEqual(['a', 'b']);
    expect(sheets.flatMap((s) => s.rows.slice(1).map((r) => r[0]))).toEqual(Array.from({ length: count }, (_, i) => `r${i + 1}`));
  });

  it('LibreOffice opens a workbook of several sheets', async () => {
    const file = path.join(work, 'varias.xlsx');
    await writeFile(file, await buffer(xlsxStream('divergencias', ['a', 'b'], rows(7), { maxRowsPerSheet: 3 })));
    await run('soffice', ['--headless', '--convert-to', 'csv', '--outdir', work, file], { timeout: onThisMachine(120_000) });
    expect(await readdir(work)).toContain('varias.csv');
  });

  it(
    'goes on to a second sheet after 1,048,575 data rows, as Excel shows at most 1,048,576 rows',
    { timeout: onThisMachine(120_000) },
    async () => {
      expect(XLSX_MAX_DATA_ROWS).toBe(1_048_575);
      const file = path.join(work, 'grande.xlsx');
      await writeFile(
        file,
        await buffer(
          xlsxStream(
            'd',
            ['a'],
            (async function* () {
              for (let i = 1; i <= XLSX_MAX_DATA_ROWS + 2; i++) yield [String(i)];
            })(),
          ),
        ),
      );
      const unzip = async (entry: string) => (await run('unzip', ['-p', file, entry], { maxBuffer: 256 * 1024 * 1024 })).stdout;
      expect(await unzip('xl/workbook.xml')).toContain(
        '<sheet name="d" sheetId="1" r:id="rId1"/><sheet name="d 2" sheetId="2" r:id="rId2"/></sheets>',
      );
      const first = await unzip('xl/worksheets/sheet1.xml');
      expect(first.slice(-200)).toContain(`<row r="1048576"><c r="A1048576" t="inlineStr" s="2"><is><t>${XLSX_MAX_DATA_ROWS}</t>`);
      const second = await unzip('xl/worksheets/sheet2.xml');
      expect([...second.matchAll(/<row r="(\d+)">/g)].map((m) => m[1])).toEqual(['1', '2', '3']);
      expect(second).toContain(`<t>${XLSX_MAX_DATA_ROWS + 2}</t>`);
    },
  );
});

describe('jsonListItems', () => {
  const items = [
    {
      codigo_na_escola: 'A{1}',
      linha: '2',
      campo: 'Nome "completo"',
      enviado: '[x] \\ }',
      correto: 'JOÃO 😀',
      is_filiacao: false,
      chave: null,
    },
    { codigo_na_escola: '', linha: '', campo: '', enviado: '', correto: 'x', is_filiacao: true, chave: 'nome_mae' },
  ];

  it('reads back what jsonListChunks wrote, one item at a time, whatever the chunk boundaries', async () => {
    let text = '';
    for await (const chunk of jsonListChunks('divergencias', items)) text += chunk;
    const bytes = Buffer.from(text);
    for (const size of [1, 2, 3, 7, 64, bytes.length]) {
      const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
      const read: unknown[] = [];
      for await (const item of jsonListItems(
        (async function* () {
          yield* chunks;
        })(),
      ))
        read.push(item);
      expect(read, `chunks of ${size}`).toEqual(items);
    }
  });

  it('an empty list has no items', async () => {
    const read: unknown[] = [];
    for await (const item of jsonListItems(
      (async function* () {
        yield Buffer.from('{"pessoas":[]}');
      })(),
    ))
      read.push(item);
    expect(read).toEqual([]);
  });
});
