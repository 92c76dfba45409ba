// The school a return is about, by its INEP code (SPEC §1.2, issue 54): a wrapped JSON's top-level
// `escola` (or a synonym) before or after the rows, an xlsx title row above the header; what the
// divergencias job then returns. Files renamed between rounds still say which school they are.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRetorno, runJob, type RetornoRow } from '@censo/shared';
import { buildXlsx, HEADER, textRow, writeTemp } from '../helpers/xlsx-builders.js';

const RF = 'Diverge da base da Receita Federal.';
const ROW = { Registro: '30', Linha: '2', 'Código na Escola': 'A1', Campo: 'Número do CPF', Mensagem: RF, Conteúdo: '1 -- 2' };
const READ: RetornoRow = { registro: '30', linha: '2', codigo: 'A1', campo: 'Número do CPF', mensagem: RF, conteudo: '1 -- 2' };

/** The rows and the school's code the reader told (null when it told none). */
async function read(file: string, format: 'json' | 'xlsx'): Promise<{ rows: RetornoRow[]; escola: string | null; told: number }> {
  const rows: RetornoRow[] = [];
  let escola: string | null = null;
  let told = 0;
  for await (const row of readRetorno(
    { path: file, format },
    {
      escola: (codigo) => {
        escola = codigo;
        told++;
      },
    },
  ))
    rows.push(row);
  return { rows, escola, told };
}

const json = async (content: string) => read(await writeTemp('json', content), 'json');

describe('the school code of a JSON return', () => {
  it('is a string property before the rows array', async () => {
    expect(await json(JSON.stringify({ escola: '12345678', erros: [ROW] }))).toEqual({ rows: [READ], escola: '12345678', told: 1 });
  });

  it('is a number property after the rows array', async () => {
    expect(await json(JSON.stringify({ erros: [ROW, ROW], totais: [7, 2], escola: 12345678 }))).toEqual({
      rows: [READ, READ],
      escola: '12345678',
      told: 1,
    });
  });

  it("is the code a value starts with, before the school's name", async () => {
    expect((await json(JSON.stringify({ escola: '12345678 - ESCOLA ESTADUAL SÃO JOSÉ', erros: [ROW] }))).escola).toBe('12345678');
    expect((await json(JSON.stringify({ escola: ' 12345678', erros: [ROW] }))).escola).toBe('12345678');
  });

  it('is found under the synonyms, keys matched like column names', async () => {
    for (const key of ['ESCOLA', 'Código da Escola', 'CO_ENTIDADE', 'código   INEP da escola', 'Inep da Escola']) {
      expect((await json(`{"erros": [${JSON.stringify(ROW)}], ${JSON.stringify(key)}: "23456789"}`)).escola, key).toBe('23456789');
    }
    // An escaped key is read as its text.
    expect((await json(`{"c\\u00f3digo da escola": "23456789", "erros": []}`)).escola).toBe('23456789');
  });

  it('is absent without a school property, and the rows are as before', async () => {
    expect(await json(JSON.stringify({ erros: [ROW] }))).toEqual({ rows: [READ], escola: null, told: 0 });
    expect(await json(JSON.stringify([ROW]))).toEqual({ rows: [READ], escola: null, told: 0 });
    // A key of a row is a column, not the file's school.
    expect((await json(JSON.stringify({ erros: [{ ...ROW, escola: '12345678' }] }))).escola).toBeNull();
    // Nor is a property of a nested object.
    expect((await json(JSON.stringify({ meta: { escola: '12345678' }, erros: [ROW] }))).escola).toBeNull();
  });

  it('is absent when the value is not a code: a name, nine or seven digits, a code glued to text, another type', async () => {
    for (const value of [
      '"E. E. X"',
      '"123456789"',
      '"1234567"',
      '"12345678ESCOLA"',
      '123456789',
      '1234567.5',
      'true',
      'null',
      '["12345678"]',
      '{"c": "12345678"}',
    ]) {
      expect((await json(`{"escola": ${value}, "erros": [${JSON.stringify(ROW)}]}`)).escola, value).toBeNull();
    }
  });

  it('takes the first school property that holds a code', async () => {
    expect(
      (await json(JSON.stringify({ escola: 'E. E. X', co_entidade: '34567890', erros: [ROW], 'codigo da escola': '45678901' }))).escola,
    ).toBe('34567890');
  });

  it('is found after a rows array that spans many chunks', async () => {
    const rows = Array.from({ length: 3_000 }, (_, i) => ({ ...ROW, Linha: String(i + 2), Conteúdo: `${'ç'.repeat(20)} -- x` }));
    const read = await json(JSON.stringify({ erros: rows, escola: '12345678 - ESCOLA' }));
    expect(read.rows).toHaveLength(3_000);
    expect(read.escola).toBe('12345678');
  });

  it('is not told for a file that turns out unreadable', async () => {
    const file = await writeTemp('json', `{"escola": "12345678", "erros": [${JSON.stringify(ROW)}], }`);
    let told = false;
    await expect(async () => {
      for await (const _row of readRetorno({ path: file, format: 'json' }, { escola: () => (told = true) }));
    }).rejects.toThrow('Arquivo retorno ilegível');
    expect(told).toBe(false);
  });
});

describe('the school code of an xlsx return', () => {
  it('is a title row above the header that names the school', async () => {
    for (const title of [['Escola: 12345678 - E. M. JOÃO'], ['Código da escola', '12345678'], ['Relatório', 'INEP 12345678']]) {
      const file = await buildXlsx({
        sheets: [{ rows: textRow(1, title) + textRow(3, [...HEADER]) + textRow(4, ['30', '2', 'A1', 'Número do CPF', RF, '1 -- 2']) }],
      });
      expect(await read(file, 'xlsx'), title.join(' ')).toEqual({ rows: [READ], escola: '12345678', told: 1 });
    }
  });

  it('is absent without such a title, and a data row never names the school', async () => {
    const file = await buildXlsx({
      sheets: [
        {
          rows:
            textRow(1, ['Relatório de erros 2025']) +
            textRow(2, [...HEADER]) +
            textRow(3, ['30', '2', 'A1', 'Número do CPF', RF, '1 -- 2']) +
            textRow(4, ['30', '3', 'Escola 12345678', 'Número do CPF', RF, '1 -- 2']),
        },
      ],
    });
    const got = await read(file, 'xlsx');
    expect(got.rows).toHaveLength(2);
    expect(got.escola).toBeNull();
  });
});

describe('the divergencias job', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'censo-escola-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("returns the school's code with its count, null when the file has none", async () => {
    const comCodigo = await writeTemp('json', JSON.stringify({ erros: [ROW], escola: '12345678 - ESCOLA X' }));
    const semCodigo = await writeTemp('json', JSON.stringify({ escola: 'ESCOLA X', erros: [ROW] }));
    expect(
      await runJob({ kind: 'divergencias', retorno: { path: comCodigo, format: 'json' }, resultPath: path.join(dir, 'a') }),
    ).toMatchObject({
      ok: true,
      count: 1,
      escola: '12345678',
    });
    expect(
      await runJob({ kind: 'divergencias', retorno: { path: semCodigo, format: 'json' }, resultPath: path.join(dir, 'b') }),
    ).toMatchObject({
      ok: true,
      count: 1,
      escola: null,
    });
  });
});
