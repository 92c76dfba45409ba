import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codigoKey, mergePessoas, TxtMismatchError, type Chave, type Divergencia } from '@censo/shared';

let dir: string;
let txt: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-merge-'));
  txt = path.join(dir, 'censo.txt');
  const pad = '|'.repeat(98);
  await writeFile(
    txt,
    Buffer.from(
      [
        `00|12345678|1|ESCOLA${pad}`,
        `30|12345678|ALU0001|123456789012|52998224725|MARIA DA SILVA|14/03/2014|1|ANA DA SILVA|JOSE DA SILVA${pad}`,
        `30|12345678|0042|123456789013|11144477735|JOÃO|1/7/2013|1|CONCEIÇÃO||2`,
        `40|12345678|ALU0001||1|1|1`,
        `30|12345678|ALU0003||39053344705|CARLOS|2012-11-22|1|MAE|PAI`,
        `30|12345678|SHORT|1|2|3`,
        `30|12345678|ALU0003|999|00000000000|OUTRO CARLOS|01/01/2000|1|OUTRA MAE|`,
        `99|`,
      ].join('\r\n'),
      'latin1',
    ),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function d(linha: string, codigo: string, chave: Chave | null, correto: string): Divergencia {
  return {
    codigo_na_escola: codigo,
    linha,
    campo: 'x',
    enviado: 'old',
    correto,
    is_filiacao: chave === 'nome_mae' || chave === 'nome_pai',
    chave,
  };
}

async function mismatch(divergencias: Divergencia[]): Promise<TxtMismatchError> {
  const err = await mergePessoas(divergencias, txt).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TxtMismatchError);
  return err as TxtMismatchError;
}

describe('mergePessoas', () => {
  it('takes the text file values, the diverged fields from the return, in line order', async () => {
    const pessoas = await mergePessoas(
      [d('5', 'ALU0003', 'cpf', '11111111111'), d('2', 'ALU0001', 'nome', 'MARIA DE SOUZA'), d('2', 'ALU0001', 'inep', '999999999999')],
      txt,
    );
    expect(pessoas).toEqual([
      {
        codigo_na_escola: 'ALU0001',
        linha: '2',
        cpf: '52998224725',
        nome: 'MARIA DE SOUZA',
        data_nascimento: '14/03/2014',
        inep: '999999999999',
        nome_mae: 'ANA DA SILVA',
      },
      {
        codigo_na_escola: 'ALU0003',
        linha: '5',
        cpf: '11111111111',
        nome: 'CARLOS',
        data_nascimento: '22/11/2012',
        inep: '',
        nome_mae: 'MAE',
      },
    ]);
    expect(Object.keys(pessoas[0]!)).toEqual(['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae']);
  });

  it('lets the later row win when one field diverges twice', async () => {
    const [p] = await mergePessoas([d('2', 'ALU0001', 'cpf', '1'), d('2', 'ALU0001', 'cpf', '2'), d('2', '', 'cpf', '3')], txt);
    expect(p?.cpf).toBe('3');
  });

  it('converts every birth date to DD/MM/YYYY, the text file one too', async () => {
    const pessoas = await mergePessoas([d('2', 'ALU0001', 'data_nascimento', '2014-03-15T00:00:00Z'), d('3', '42', null, 'x')], txt);
    expect(pessoas.map((p) => p.data_nascimento)).toEqual(['15/03/2014', '01/07/2013']);
  });

  it('never applies nome_mae; nome_pai and null only make the person appear', async () => {
    const pessoas = await mergePessoas(
      [d('2', 'ALU0001', 'nome_mae', 'OUTRA'), d('3', '0042', 'nome_pai', 'PAI'), d('5', 'ALU0003', null, 'x')],
      txt,
    );
    expect(pessoas).toEqual([
      {
        codigo_na_escola: 'ALU0001',
        linha: '2',
        cpf: '52998224725',
        nome: 'MARIA DA SILVA',
        data_nascimento: '14/03/2014',
        inep: '123456789012',
        nome_mae: 'ANA DA SILVA',
      },
      {
        codigo_na_escola: '0042',
        linha: '3',
        cpf: '11144477735',
        nome: 'JOÃO',
        data_nascimento: '01/07/2013',
        inep: '123456789013',
        nome_mae: 'CONCEIÇÃO',
      },
      {
        codigo_na_escola: 'ALU0003',
        linha: '5',
        cpf: '39053344705',
        nome: 'CARLOS',
        data_nascimento: '22/11/2012',
        inep: '',
        nome_mae: 'MAE',
      },
    ]);
  });

  it('returns no persons for no divergences', async () => {
    expect(await mergePessoas([], txt)).toEqual([]);
  });

  it('matches all-digit codes without leading zeros, other codes as trimmed text', async () => {
    expect(codigoKey(' 0042 ')).toBe('42');
    expect(codigoKey('000')).toBe('0');
    expect(codigoKey(' A042 ')).toBe('A042');
    const pessoas = await mergePessoas([d('3', '42', 'nome', 'JOAO'), d('2', ' ALU0001 ', 'nome', 'M')], txt);
    expect(pessoas.map((p) => [p.codigo_na_escola, p.nome])).toEqual([
      ['ALU0001', 'M'],
      ['0042', 'JOAO'],
    ]);
  });

  it('does not check an empty code', async () => {
    expect(await mergePessoas([d('2', '', 'nome', 'M')], txt)).toHaveLength(1);
  });

  it('answers 422 when the line is not a record 30', async () => {
    const err = await mismatch([d('4', 'ALU0001', 'cpf', '1')]);
    expect(err.status).toBe(422);
    expect(err.code).toBe('TXT_MISMATCH');
    expect(err.message).toBe('O arquivo txt não corresponde ao retorno (linha 4).');
    expect((await mismatch([d('1', '', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha 1).');
  });

  it('answers 422 for a record 30 with fewer than 10 fields', async () => {
    expect((await mismatch([d('6', 'SHORT', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha 6).');
  });

  it('answers 422 for a line beyond the end of the file or not a line number', async () => {
    expect((await mismatch([d('9', 'ALU0001', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha 9).');
    expect((await mismatch([d('0', 'ALU0001', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha 0).');
    expect((await mismatch([d('abc', 'ALU0001', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha abc).');
  });

  it('answers 422 when the code differs from field 3', async () => {
    expect((await mismatch([d('2', 'ALU0002', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha 2).');
    expect((await mismatch([d('3', 'A42', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (linha 3).');
  });

  it('reports the first offending divergence in return order, not line order', async () => {
    const err = await mismatch([d('2', 'ALU0001', 'cpf', '1'), d('8', 'X', 'cpf', '1'), d('4', 'ALU0001', 'cpf', '1')]);
    expect(err.message).toBe('O arquivo txt não corresponde ao retorno (linha 8).');
  });

  it('without a linha, takes the first record 30 whose field 3 is the code', async () => {
    const pessoas = await mergePessoas([d('', 'ALU0003', 'nome', 'NOVO'), d('', '042', 'cpf', '1'), d('5', 'ALU0003', 'cpf', '2')], txt);
    expect(pessoas.map((p) => [p.linha, p.nome, p.cpf])).toEqual([
      ['3', 'JOÃO', '1'],
      ['5', 'NOVO', '2'],
    ]);
  });

  it('without a linha, answers 422 (código c) when no record 30 has the code', async () => {
    const err = await mismatch([d('', 'ALU0001', 'cpf', '1'), d('', 'NINGUEM', 'cpf', '1')]);
    expect(err.status).toBe(422);
    expect(err.message).toBe('O arquivo txt não corresponde ao retorno (código NINGUEM).');
    // A short record 30 is not usable, by code either.
    expect((await mismatch([d('', 'SHORT', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (código SHORT).');
    // Neither line nor code identifies anyone.
    expect((await mismatch([d('', '', 'cpf', '1')])).message).toBe('O arquivo txt não corresponde ao retorno (código ).');
  });

  it('gives the same result whatever the read chunk size', async () => {
    const divs = [d('2', 'ALU0001', 'nome', 'M'), d('3', '42', 'cpf', '1'), d('', 'ALU0003', 'inep', '7')];
    const expected = await mergePessoas(divs, txt);
    for (const highWaterMark of [1, 2, 3, 7, 64]) {
      expect(await mergePessoas(divs, txt, { highWaterMark })).toEqual(expected);
    }
  });
});
