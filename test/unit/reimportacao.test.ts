// INEP's re-import rules through the core (SPEC §11): each case of the table decides `correcao`
// from the return alone (runJob divergencias) and what the corrected file writes (runJob
// censo-corrigido), byte for byte; then rule 25's second form, the file-wide rules (`99|` last,
// at most 100 schools) and what the corrected file lists as left out.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descaracteriza, orientacao, runJob, type Divergencia, type Grupo1, type Grupo2 } from '@censo/shared';
import { CASOS, corrigidoDe, record30, retornoDe, SCHOOL, txtDe, type Caso } from '../helpers/reimportacao-casos.js';

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-reimportacao-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function files(caso: Caso, txt = txtDe(caso)) {
  const id = n++;
  const retorno = path.join(dir, `retorno-${id}.json`);
  const censo = path.join(dir, `censo-${id}.txt`);
  await writeFile(retorno, JSON.stringify(retornoDe(caso)));
  await writeFile(censo, txt, 'latin1');
  return { retorno: { path: retorno, format: 'json' as const }, txt: { path: censo }, id };
}

describe.each(CASOS)('$regra', (caso) => {
  it('decides correcao from the return alone, with a sentence for each', async () => {
    const { retorno, id } = await files(caso);
    const resultPath = path.join(dir, `div-${id}.json`);
    expect(await runJob({ kind: 'divergencias', retorno, resultPath })).toMatchObject({ ok: true, count: caso.correcao.length });
    const { divergencias } = JSON.parse(await readFile(resultPath, 'utf8')) as { divergencias: Divergencia[] };
    expect(divergencias.map((d) => d.correcao)).toEqual(caso.correcao);
    for (const d of divergencias) expect(orientacao(d)).toMatch(/\.$/);
  });

  it('writes the corrected file as the rules allow, and counts what it leaves out', async () => {
    const { retorno, txt, id } = await files(caso);
    const resultPath = path.join(dir, `out-${id}.txt`);
    const result = await runJob({ kind: 'censo-corrigido', retorno, txt, resultPath });
    expect(result).toMatchObject({
      ok: true,
      corrigido: { pessoasCorrigidas: caso.linha === null ? 0 : 1, naoAplicadas: caso.naoAplicadas, pessoasRegra25: caso.regra25 ? 1 : 0 },
    });
    expect((await readFile(resultPath)).toString('latin1')).toBe(corrigidoDe(caso));
  });
});

describe('rule 25 (descaracterização), both forms', () => {
  const cases: Array<[Grupo1[], Grupo2[], boolean]> = [
    [['nome', 'data_nascimento', 'filiacao_1'], [], true],
    [['nome', 'data_nascimento', 'filiacao_2'], [], true],
    [['nome', 'filiacao_1', 'filiacao_2'], [], true],
    [['nome', 'data_nascimento'], [], false],
    [['nome', 'data_nascimento'], ['sexo'], true],
    [['data_nascimento', 'filiacao_2'], ['municipio_nascimento'], true],
    [['nome'], ['sexo', 'cor_raca', 'pais', 'deficiencia'], false],
    [[], ['sexo', 'cor_raca'], false],
  ];
  it.each(cases)('%j with %j changed → %s', (grupo1, grupo2, expected) => {
    expect(descaracteriza({ grupo1: new Set(grupo1), grupo2: new Set(grupo2) })).toBe(expected);
  });
});

describe('the whole file (general rules 38 and 39)', () => {
  const caso = CASOS.find((c) => c.linha !== null && c.outras === undefined)!;

  it('a file without the record 99 gets it last, in its own line ends, with or without a final newline', async () => {
    for (const [txt, expected] of [
      [`${SCHOOL}\r\n${record30('ALU1')}\r\n`, '\r\n99|\r\n'],
      [`${SCHOOL}\r\n${record30('ALU1')}`, '\r\n99|'],
    ] as const) {
      const { retorno, txt: censo, id } = await files(caso, txt);
      const resultPath = path.join(dir, `out-${id}.txt`);
      expect(await runJob({ kind: 'censo-corrigido', retorno, txt: censo, resultPath })).toMatchObject({ ok: true });
      const written = (await readFile(resultPath)).toString('latin1');
      expect(written.endsWith(expected)).toBe(true);
      expect(written.split('99|')).toHaveLength(2);
    }
  });

  it('100 schools are one file; 101 are refused with a 400 that says how to split them, and nothing is left behind', async () => {
    const schools = (count: number) =>
      Array.from({ length: count }, (_, i) => `${SCHOOL.replace('12345678', String(10000000 + i))}\n${record30(`ALU${i + 1}`)}\n`).join(
        '',
      ) + '99|\n';
    const ok = await files(caso, schools(100));
    expect(
      await runJob({ kind: 'censo-corrigido', retorno: ok.retorno, txt: ok.txt, resultPath: path.join(dir, 'cem.txt') }),
    ).toMatchObject({
      ok: true,
    });
    const over = await files(caso, schools(101));
    const resultPath = path.join(dir, 'cento-e-uma.txt');
    expect(await runJob({ kind: 'censo-corrigido', retorno: over.retorno, txt: over.txt, resultPath })).toEqual({
      ok: false,
      status: 400,
      code: 'BAD_INPUT',
      erro: 'O arquivo txt tem 101 escolas; o Educacenso aceita no máximo 100 escolas por arquivo. Divida-o em arquivos de até 100 escolas.',
    });
    await expect(readFile(resultPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('lists the first corrections it leaves out, each with the rule that kept it out, and the persons rule 25 may refuse', async () => {
    const regra25 = CASOS.find((c) => c.regra.startsWith('regra 25: nome, data e uma mãe'))!;
    const { retorno, txt, id } = await files(regra25);
    const result = await runJob({ kind: 'censo-corrigido', retorno, txt, resultPath: path.join(dir, `out-${id}.txt`) });
    expect(result.ok && result.corrigido).toMatchObject({
      amostra: [
        {
          codigo_na_escola: 'ALU1',
          linha: '2',
          chave: 'nome_mae',
          campo: 'Filiação 1',
          enviado: 'ANA DA SILVA',
          correto: '1234',
          correcao: 'receita',
          motivo: 'layout',
        },
      ],
      pessoasRegra25: 1,
      amostraRegra25: [{ codigo_na_escola: 'ALU1', linha: '2' }],
    });
  });
});
