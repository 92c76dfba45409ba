// INEP's re-import rules in the `censo` command (SPEC §11): every case of the rules' table decides
// `correcao` in `censo divergencias` and what `censo corrigir` writes, with the count of what it
// left out on stderr, as the service does.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CASOS, corrigidoDe, retornoDe, txtDe, type Caso } from '../helpers/reimportacao-casos.js';
import { censo } from './censo-process.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-cli-reimportacao-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.each(CASOS.map((caso, i) => [i, caso] as const))('case %i', (i, caso: Caso) => {
  it(`${caso.regra}: correcao in censo divergencias, the file and its count in censo corrigir`, async () => {
    const retorno = path.join(dir, `retorno-${i}.json`);
    const txt = path.join(dir, `censo-${i}.txt`);
    const out = path.join(dir, `corrigido-${i}.txt`);
    await writeFile(retorno, JSON.stringify(retornoDe(caso)));
    await writeFile(txt, txtDe(caso), 'latin1');

    const listed = await censo(['divergencias', retorno]);
    expect(listed.code, listed.stderr).toBe(0);
    const { divergencias } = JSON.parse(listed.stdout.toString('utf8')) as { divergencias: Array<{ correcao: string }> };
    expect(divergencias.map((d) => d.correcao)).toEqual(caso.correcao);

    const run = await censo(['corrigir', retorno, txt, '-o', out]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      `Pessoas corrigidas: ${caso.linha === null ? 0 : 1} (linhas de pessoas que o arquivo corrigido altera)`,
      `Correções não aplicadas: ${caso.naoAplicadas} (divergências destas pessoas que o arquivo corrigido não escreve, fora as só de grafia)`,
    ]);
    // One line per correction left out, each naming the rule; then the persons rule 25 may refuse.
    const regra25 = lines.findIndex((line) => line.startsWith('Pessoas que o INEP pode recusar'));
    const leftOut = lines.slice(2, regra25 < 0 ? undefined : regra25).filter((line) => /^ {2}ALU\d /.test(line));
    expect(leftOut).toHaveLength(caso.naoAplicadas);
    for (const line of leftOut) expect(line).toMatch(/: [^:]+\.$/);
    if (caso.regra25) {
      expect(lines.slice(regra25, regra25 + 2)).toEqual([
        'Pessoas que o INEP pode recusar (regra 25, descaracterização): 1 (o arquivo leva o nome e a data de nascimento da ' +
          'Receita Federal; confirme os dados delas no formulário do Educacenso)',
        '  ALU1 (linha 2 do txt)',
      ]);
    } else expect(regra25).toBe(-1);
    expect((await readFile(out)).toString('latin1')).toBe(corrigidoDe(caso));
  });
});
