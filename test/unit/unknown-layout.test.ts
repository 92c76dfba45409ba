// Issue: a return whose header nobody has seen (SPEC §1.2). The 400 names what was found and what
// is missing; COLUMNS_FILE teaches new headers and field labels without a release.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, createVocabulary, findDivergencias, loadColumnsFile, readRetorno, type RetornoFormat } from '@censo/shared';
import { buildXlsx, textRow } from '../helpers/xlsx-builders.js';

const UNREADABLE = 'Arquivo retorno ilegível: ';
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-layout-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const NEW_HEADER = ['Código na Escola', 'Campo', 'Descrição da inconsistência', 'Conteúdo'];
const ROW = ['ALU1', 'Documento CPF', 'Diverge da Receita Federal', '1 -- 52998224725'];

async function xlsxWith(sheets: { name: string; rows: string[][] }[]): Promise<string> {
  return buildXlsx({ sheets: sheets.map((s) => ({ name: s.name, rows: s.rows.map((r, i) => textRow(i + 1, r)).join('') })) });
}

async function jsonWith(rows: Record<string, string>[]): Promise<string> {
  const file = path.join(dir, `r-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify({ escola: 'x', erros: rows }));
  return file;
}

async function readAll(file: string, format: RetornoFormat, additions = {}) {
  const vocabulary = createVocabulary(additions);
  const out = [];
  for await (const d of findDivergencias(readRetorno({ path: file, format }, { names: vocabulary.columns }), vocabulary.labels))
    out.push(d);
  return out;
}

describe('the 400 says what was found', () => {
  it('xlsx: names the best candidate sheet, its headers and the missing roles', async () => {
    const file = await xlsxWith([
      {
        name: 'Resumo',
        rows: [
          ['Escola', 'Total'],
          ['X', '3'],
        ],
      },
      { name: 'Erros', rows: [['Relatório de erros'], NEW_HEADER, ROW] },
    ]);
    await expect(readAll(file, 'xlsx')).rejects.toThrow(
      `${UNREADABLE}cabeçalho não reconhecido na planilha "Erros" (encontradas: Código na Escola, Campo, Descrição da inconsistência, Conteúdo; faltam: mensagem).`,
    );
  });

  it('json: names the keys of the rows and the missing roles', async () => {
    const file = await jsonWith([Object.fromEntries(NEW_HEADER.map((h, i) => [h, ROW[i]!]))]);
    await expect(readAll(file, 'json')).rejects.toThrow(
      `${UNREADABLE}cabeçalho não reconhecido na lista de linhas (encontradas: Código na Escola, Campo, Descrição da inconsistência, Conteúdo; faltam: mensagem).`,
    );
  });

  it('never echoes more than 10 headers or 200 characters, nor any data cell', async () => {
    const header = Array.from({ length: 14 }, (_, i) => `Coluna ${i} ${'x'.repeat(30)}`);
    const file = await xlsxWith([{ name: 'P', rows: [header, Array.from({ length: 14 }, () => 'SEGREDO-12345')] }]);
    const error = await readAll(file, 'xlsx').then(
      () => null,
      (err: Error) => err,
    );
    const found = /\(encontradas: (.*); faltam: código, campo, mensagem\)\.$/.exec(error!.message)?.[1];
    expect(found).toBeDefined();
    expect(found!.length).toBeLessThanOrEqual(200);
    expect(found!.split(', ').length).toBeLessThanOrEqual(10);
    expect(error!.message).not.toContain('SEGREDO');
  });
});

describe('COLUMNS_FILE additions', () => {
  it('a new mensagem synonym and a new cpf label make the return readable, in both formats', async () => {
    const additions = { roles: { mensagem: ['Descrição da inconsistência'] }, chave: { cpf: ['Documento CPF'] } };
    const expected = [
      {
        codigo_na_escola: 'ALU1',
        linha: '',
        campo: 'Documento CPF',
        enviado: '1',
        correto: '52998224725',
        is_filiacao: false,
        chave: 'cpf',
        // A CPF already sent is not changed by migration (field 5 rule 10).
        correcao: 'formulario',
      },
    ];
    expect(await readAll(await xlsxWith([{ name: 'Erros', rows: [NEW_HEADER, ROW] }]), 'xlsx', additions)).toEqual(expected);
    expect(await readAll(await jsonWith([Object.fromEntries(NEW_HEADER.map((h, i) => [h, ROW[i]!]))]), 'json', additions)).toEqual(
      expected,
    );
  });

  it('the built-in synonyms keep working, and an addition cannot move a built-in name to another role', async () => {
    const additions = { roles: { conteudo: ['mensagem'] } };
    const file = await jsonWith([{ 'Código na Escola': 'A', Campo: 'CPF', Mensagem: 'Receita Federal', Conteúdo: '1 -- 2' }]);
    expect(await readAll(file, 'json', additions)).toMatchObject([{ chave: 'cpf', correto: '2' }]);
  });

  it('is validated: one clear ConfigError per problem', async () => {
    const write = async (content: string) => {
      const file = path.join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
      await writeFile(file, content);
      return file;
    };
    await expect(loadColumnsFile(null)).resolves.toEqual({});
    await expect(loadColumnsFile(await write('{"mensagem": ["Descrição"], "chave": {"cpf": ["Doc"]}}'))).resolves.toEqual({
      roles: { mensagem: ['Descrição'] },
      chave: { cpf: ['Doc'] },
    });
    const cases: [string, RegExp][] = [
      ['{"mensagens": ["x"]}', /unknown key "mensagens"/],
      ['{"mensagem": "x"}', /"mensagem" must be a list of non-empty texts/],
      ['{"mensagem": [""]}', /"mensagem" must be a list of non-empty texts/],
      ['{"chave": {"rg": ["x"]}}', /unknown chave "rg"/],
      ['["mensagem"]', /must be a JSON object/],
      ['{', /invalid JSON/],
    ];
    for (const [content, message] of cases) {
      const error = await loadColumnsFile(await write(content)).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error, content).toBeInstanceOf(ConfigError);
      expect((error as Error).message, content).toMatch(message);
      expect((error as Error).message).toMatch(/^COLUMNS_FILE /);
    }
    await expect(loadColumnsFile(path.join(dir, 'missing.json'))).rejects.toThrow(/cannot be read \(ENOENT\)/);
  });
});
