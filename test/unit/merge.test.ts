import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  codigoKey,
  mergePessoas,
  parseRecord30,
  toDataBr,
  TxtMismatchError,
  type Chave,
  type DivergenciaLida,
  type Pessoa,
} from '@censo/shared';
import { onThisMachine } from '../helpers/deadline.js';

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

function d(linha: string, codigo: string, chave: Chave | null, correto: string): DivergenciaLida {
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

async function mismatch(divergencias: DivergenciaLida[]): Promise<TxtMismatchError> {
  const err = await mergePessoas(divergencias, txt).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TxtMismatchError);
  return err as TxtMismatchError;
}

/** SPEC §3.2's fields, in order; the answer adds what the corrected file writes (issue 56). */
const SEED = ['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'] as const;
const ARQUIVO = [
  'arquivo_cpf',
  'arquivo_nome',
  'arquivo_data_nascimento',
  'arquivo_inep',
  'arquivo_nome_mae',
  'nao_aplicadas',
  'regra_25',
] as const;
const seed = (p: Pessoa): Pick<Pessoa, (typeof SEED)[number]> =>
  Object.fromEntries(SEED.map((key) => [key, p[key]])) as Pick<Pessoa, (typeof SEED)[number]>;

describe('mergePessoas', () => {
  it('takes the text file values, the diverged fields from the return, in line order', async () => {
    const pessoas = await mergePessoas(
      [d('5', 'ALU0003', 'cpf', '11111111111'), d('2', 'ALU0001', 'nome', 'MARIA DE SOUZA'), d('2', 'ALU0001', 'inep', '999999999999')],
      txt,
    );
    expect(pessoas.map(seed)).toEqual([
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
    // SPEC §3.2's seven fields first, then what the corrected file writes (issue 56).
    expect(Object.keys(pessoas[0]!)).toEqual([...SEED, ...ARQUIVO]);
  });

  it('lets the later row win when one field diverges twice', async () => {
    const [p] = await mergePessoas([d('2', 'ALU0001', 'cpf', '1'), d('2', 'ALU0001', 'cpf', '2'), d('2', '', 'cpf', '3')], txt);
    expect(p?.cpf).toBe('3');
  });

  it('converts every birth date to DD/MM/YYYY, the text file one too', async () => {
    const pessoas = await mergePessoas([d('2', 'ALU0001', 'data_nascimento', '2014-03-15T00:00:00Z'), d('3', '42', null, 'x')], txt);
    expect(pessoas.map((p) => p.data_nascimento)).toEqual(['15/03/2014', '01/07/2013']);
  });

  it('never applies nome_mae to the answer (the corrected file writes it); nome_pai and null only make the person appear', async () => {
    const pessoas = await mergePessoas(
      [d('2', 'ALU0001', 'nome_mae', 'OUTRA'), d('3', '0042', 'nome_pai', 'PAI'), d('5', 'ALU0003', null, 'x')],
      txt,
    );
    expect(pessoas.map((p) => p.arquivo_nome_mae)).toEqual(['OUTRA', 'CONCEIÇÃO', 'MAE']);
    expect(pessoas.map(seed)).toEqual([
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

/**
 * SPEC §3.2 read literally, one divergence at a time against the whole text file in memory: the
 * merge groups rows per person as they are read and reads the file twice to save memory, and must
 * answer exactly this, the same persons or the same first mismatch.
 */
function literalMerge(divergencias: readonly DivergenciaLida[], lines: readonly string[]): ReturnType<typeof seed>[] | string {
  const records = lines.map((text) => parseRecord30(text));
  const byCode = new Map<string, number>();
  records.forEach((fields, i) => {
    if (fields && !byCode.has(codigoKey(fields[2]))) byCode.set(codigoKey(fields[2]), i + 1);
  });
  const changes = new Map<number, Partial<Record<Chave, string>>>();
  for (const d of divergencias) {
    const linha = d.linha.trim();
    const codigo = d.codigo_na_escola.trim();
    let line: number | undefined;
    if (linha) {
      const n = /^\d+$/.test(linha) ? Number(linha) : 0;
      const fields = n > 0 && Number.isSafeInteger(n) ? records[n - 1] : null;
      if (!fields || (codigo && codigoKey(codigo) !== codigoKey(fields[2]))) return new TxtMismatchError({ linha }).message;
      line = n;
    } else {
      line = codigo ? byCode.get(codigoKey(codigo)) : undefined;
      if (line === undefined) return new TxtMismatchError({ codigo }).message;
    }
    const person = changes.get(line) ?? {};
    changes.set(line, person);
    if (d.chave && ['cpf', 'nome', 'data_nascimento', 'inep'].includes(d.chave)) person[d.chave] = d.correto;
  }
  return [...changes.keys()]
    .sort((a, b) => a - b)
    .map((line) => {
      const f = records[line - 1]!;
      const c = changes.get(line)!;
      return {
        codigo_na_escola: f[2],
        linha: String(line),
        cpf: c.cpf ?? f[4],
        nome: c.nome ?? f[5],
        data_nascimento: toDataBr(c.data_nascimento ?? f[6]),
        inep: c.inep ?? f[3],
        nome_mae: f[8],
      };
    });
}

describe('mergePessoas against SPEC §3.2 read row by row', () => {
  const codes = ['7', '007', 'A1', 'B2', ' 0 ', '00', ''];
  // Mostly usable records 30, so that most cases get past the mismatches to the persons.
  const line = fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .record({ code: fc.constantFrom(...codes), name: fc.constantFrom('ANA', 'JOSÉ', 'X') })
        .map(({ code, name }) => `30|s|${code}|1|2|${name}|01/02/2010|1|MAE|PAI`),
    },
    { weight: 1, arbitrary: fc.constantFrom('30|s|A1|short', '40|s|A1|1|2|3|4|5|6|7', '00|x', '') },
  );
  const row = (linha: fc.Arbitrary<string>, codigo: fc.Arbitrary<string>): fc.Arbitrary<DivergenciaLida> =>
    fc.record({
      linha,
      codigo_na_escola: codigo,
      campo: fc.constant('x'),
      enviado: fc.constant(''),
      correto: fc.constantFrom('NOVO', 'OUTRO', '2014-03-15', '15/03/2014', '12345678901', ''),
      is_filiacao: fc.constant(false),
      chave: fc.constantFrom<Chave | null>('cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', null),
    });
  // Mostly rows that can match (by line, the code empty or checked; by code alone), some that cannot.
  const divergencia = (lineCount: number) =>
    fc.oneof(
      { weight: 4, arbitrary: row(fc.integer({ min: 1, max: lineCount }).map(String), fc.constantFrom('', '', '', ...codes)) },
      { weight: 3, arbitrary: row(fc.constant(''), fc.constantFrom(...codes.filter(Boolean), ' 07', ' A1 ')) },
      { weight: 1, arbitrary: row(fc.constantFrom('01', ' 2 ', '0', 'x', '', String(lineCount + 1)), fc.constantFrom('', 'ZZ', 'B2')) },
    );
  const cases = fc
    .array(line, { minLength: 1, maxLength: 12 })
    .chain((lines) => fc.tuple(fc.constant(lines), fc.array(divergencia(lines.length), { maxLength: 10 })));

  it(
    'answers the same persons, or the same first mismatch, as the literal reading',
    async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(cases, async ([lines, divergencias]) => {
          const file = path.join(dir, `model-${n++}.txt`);
          await writeFile(file, lines.join('\n'), 'latin1');
          const expected = literalMerge(divergencias, lines);
          const actual = await mergePessoas(divergencias, file).catch((err: unknown) => {
            if (err instanceof TxtMismatchError) return err.message;
            throw err;
          });
          expect(Array.isArray(actual) ? actual.map(seed) : actual).toEqual(divergencias.length === 0 ? [] : expected);
        }),
        { numRuns: 1000, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
      );
    },
    onThisMachine(30_000),
  );
});
