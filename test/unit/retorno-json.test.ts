// The JSON reader (SPEC §1.2): shapes, value → text, and every bad input as one BadInputError.
import { BadInputError } from '@censo/shared';
import { describe, expect, it } from 'vitest';
import { readError, readRows, writeTemp } from '../helpers/xlsx-builders.js';

const RF = 'Diverge da base da Receita Federal.';
const ROW = { Registro: '30', Linha: '2', 'Código na Escola': 'A1', Campo: 'CPF', Mensagem: RF, Conteúdo: '1 -- 2' };
const READ = { registro: '30', linha: '2', codigo: 'A1', campo: 'CPF', mensagem: RF, conteudo: '1 -- 2' };

async function rows(content: string | Buffer) {
  return readRows(await writeTemp('json', content), 'json');
}

async function unreadable(content: string | Buffer, why: string): Promise<void> {
  const err = await readError(await writeTemp('json', content), 'json');
  expect(err).toBeInstanceOf(BadInputError);
  expect(err.message).toBe(`Arquivo retorno ilegível: ${why}`);
}

describe('json shapes', () => {
  it('reads a top-level array of row objects', async () => {
    expect(await rows(JSON.stringify([ROW, ROW]))).toEqual([READ, READ]);
  });

  it('reads the first property holding an array of objects only', async () => {
    const doc = { escola: 'E. E. X', totais: [7, 2], vazio: {}, misto: [{ a: 1 }, 2], erros: [ROW], outros: [{ Campo: 'x' }] };
    expect(await rows(JSON.stringify(doc))).toEqual([READ]);
  });

  it('an empty rows array is a readable return with no rows', async () => {
    expect(await rows('[]')).toEqual([]);
    expect(await rows(' { "erros" : [ ] } ')).toEqual([]);
    // [] counts as an array of objects only, so it is the rows array even before a later one.
    expect(await rows(JSON.stringify({ erros: [], mais: [ROW] }))).toEqual([]);
  });

  it('allows a BOM and white space everywhere', async () => {
    const text = `\uFEFF\n[\n  ${JSON.stringify(ROW, null, 2)} ,\r\n\t${JSON.stringify(ROW)}\n]\n`;
    expect(await rows(Buffer.from(text, 'utf8'))).toEqual([READ, READ]);
  });

  it('matches keys like column names, first key of a role winning', async () => {
    const row = {
      '  TIPO de registro ': 30,
      'Número da linha': 7,
      'CÓDIGO PESSOA': 'X',
      'Descrição do campo': 'Nome',
      Erro: RF,
      Descrição: 'ignored',
      Valor: 'a -- b',
      Outra: 'z',
    };
    expect(await rows(JSON.stringify([row]))).toEqual([
      { registro: '30', linha: '7', codigo: 'X', campo: 'Nome', mensagem: RF, conteudo: 'a -- b' },
    ]);
  });

  it('leaves registro/linha null when a row has no such key, conteudo empty', async () => {
    expect(await rows(JSON.stringify([{ 'Código na Escola': 'A', Campo: 'B', Mensagem: 'C' }]))).toEqual([
      { registro: null, linha: null, codigo: 'A', campo: 'B', mensagem: 'C', conteudo: '' },
    ]);
  });

  it('turns values into text: numbers in decimal, big integers exactly, booleans, null and nesting', async () => {
    const text =
      '[{"Registro": 30.0, "Linha": 12345678901234567890, "Código na Escola": 1e2, "Campo": true, "Mensagem": -0.5, "Conteúdo": null},' +
      ' {"Registro": {"a": 1}, "Linha": [1, 2], "Código na Escola": 0, "Campo": false, "Mensagem": "m", "Conteúdo": -9007199254740993}]';
    expect(await rows(text)).toEqual([
      { registro: '30', linha: '12345678901234567890', codigo: '100', campo: 'true', mensagem: '-0.5', conteudo: '' },
      { registro: '', linha: '', codigo: '0', campo: 'false', mensagem: 'm', conteudo: '-9007199254740993' },
    ]);
  });

  it('keeps strings as written, escapes decoded, and skips rows whose values are all empty', async () => {
    const text = '[{"Código na Escola":"A\\u00e9\\n\\"q\\"","Campo":" c ","Mensagem":"m"}, {"Código na Escola":"","Campo":"  "}, {}]';
    expect(await rows(text)).toEqual([{ registro: null, linha: null, codigo: 'Aé\n"q"', campo: ' c ', mensagem: 'm', conteudo: '' }]);
  });

  it('reads a large array across many chunks, with multi-byte characters at every offset', async () => {
    const many = Array.from({ length: 20_000 }, (_, i) => ({ ...ROW, Linha: String(i), 'Código na Escola': `Ç${'ã'.repeat(i % 7)}😀` }));
    const read = await rows(JSON.stringify({ escola: 'x', erros: many }));
    expect(read).toHaveLength(20_000);
    read.forEach((r, i) => {
      expect(r.linha).toBe(String(i));
      expect(r.codigo).toBe(`Ç${'ã'.repeat(i % 7)}😀`);
    });
  });

  it('reads one huge row object spanning chunks', async () => {
    const extra = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`Outra ${i}`, 'x'.repeat(30_000)]));
    const big = { ...ROW, ...extra, Conteúdo: 'fim -- ok' };
    expect(await rows(JSON.stringify([ROW, big, ROW]))).toEqual([READ, { ...READ, conteudo: 'fim -- ok' }, READ]);
  });
});

describe('the 32,767-character cell limit (SPEC §5) inside rows', () => {
  const LONG = 'tem um texto com mais de 32.767 caracteres.';
  it('reads a value of exactly 32,767 characters, and one of 20,000 two-byte characters', async () => {
    expect(await rows(JSON.stringify([{ ...ROW, Conteúdo: 'x'.repeat(32_767) }]))).toEqual([{ ...READ, conteudo: 'x'.repeat(32_767) }]);
    expect(await rows(JSON.stringify([{ ...ROW, Campo: 'é'.repeat(20_000) }]))).toEqual([{ ...READ, campo: 'é'.repeat(20_000) }]);
  });

  it('refuses a value or a key of 32,768 characters, also across read chunks and in an ignored column', async () => {
    await unreadable(JSON.stringify([{ ...ROW, Conteúdo: 'x'.repeat(32_768) }]), LONG);
    await unreadable(JSON.stringify([ROW, { ...ROW, Outra: 'y'.repeat(600_000) }]), LONG);
    await unreadable(JSON.stringify([{ ...ROW, ['k'.repeat(32_768)]: 1 }]), LONG);
  });
});

describe('unreadable json', () => {
  const INVALID = 'não é um JSON válido.';
  const NO_ARRAY = 'o JSON não contém uma lista de linhas.';
  const NOT_OBJECTS = 'as linhas do JSON devem ser objetos.';

  it('refuses text that is not JSON', async () => {
    for (const text of [
      '',
      '   ',
      'hello',
      '{"a" 1}',
      '[{"a":1},]',
      '[{"a":1}}',
      "{'a': 1}",
      '[{"a": tru}]',
      '[{"a":1}] x',
      '{"a": [1,], "b": [{"c":1}]}',
      '{"a": 01, "b": []}',
      '{"a": "x\u0001"}',
    ]) {
      await unreadable(text, INVALID);
    }
  });

  it('refuses truncated JSON', async () => {
    const full = JSON.stringify([ROW, ROW]);
    for (const cut of [1, 10, full.length - 1, full.length - 30]) await unreadable(full.slice(0, cut), INVALID);
    await unreadable(JSON.stringify({ erros: [ROW] }).slice(0, -1), INVALID);
  });

  it('refuses JSON without a rows array', async () => {
    for (const text of ['42', '"texto"', 'null', 'true', '{}', '{"escola": "x", "totais": [1, 2], "misto": [{"a":1}, "b"]}']) {
      await unreadable(text, NO_ARRAY);
    }
  });

  it('refuses a top-level array whose rows are not objects', async () => {
    for (const text of ['[1,2]', '[[{"Campo":1}]]', `[${JSON.stringify(ROW)}, 3]`, '["a"]', '[null]']) await unreadable(text, NOT_OBJECTS);
  });

  it('refuses rows without the código, campo and mensagem keys', async () => {
    // SPEC §1.2: the error names the keys found (at most 10, 200 characters) and the roles missing.
    await unreadable(
      '[{"Registro": "30", "Linha": "1"}]',
      'cabeçalho não reconhecido na lista de linhas (encontradas: Registro, Linha; faltam: código, campo, mensagem).',
    );
    await unreadable('[{}]', 'cabeçalho não reconhecido na lista de linhas (encontradas: nenhuma; faltam: código, campo, mensagem).');
    // The first array of objects is the rows array, even when a later one would have the keys.
    await unreadable(
      JSON.stringify({ totais: [{ n: 1 }], erros: [ROW] }),
      'cabeçalho não reconhecido na lista de linhas (encontradas: n; faltam: código, campo, mensagem).',
    );
  });

  it('survives deep nesting without a stack overflow', async () => {
    await unreadable('['.repeat(100_000), NOT_OBJECTS);
    await unreadable('{"a":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}', NO_ARRAY);
    await unreadable('{"a":' + '['.repeat(100_000), INVALID);
    // Deep nesting inside a row is parsed (and ignored as a nested value).
    const deep = `[{"Código na Escola":"A","Campo":"B","Mensagem":"C","x":${'['.repeat(50_000)}${']'.repeat(50_000)}}]`;
    expect(await rows(deep)).toEqual([{ registro: null, linha: null, codigo: 'A', campo: 'B', mensagem: 'C', conteudo: '' }]);
  });
});
