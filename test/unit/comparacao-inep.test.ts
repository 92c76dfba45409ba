// Issue 54: the comparison of two rounds pairs a school by the INEP code its files carry before
// any name: files pre-named by position trade names between rounds, and a renamed one keeps its
// school. Two files whose codes differ are two schools whatever their names; a file without a code
// is paired as before (the same referencia, else the folder).
import { describe, expect, it } from 'vitest';
import { compararRodadas, type DivergenciaRodada, type Rodada } from '@censo/shared';

const div = (referencia: string, codigo: string): DivergenciaRodada => ({
  referencia,
  codigo_na_escola: codigo,
  campo: 'Número do CPF',
  enviado: '1',
  correto: '2',
  chave: 'cpf',
  correcao: 'formulario',
});

/** A round: each file's referencia → [its school's code or null, the persons with a CPF divergence]. */
function rodada(files: Record<string, [string | null, string[]]>): Rodada {
  return {
    referencias: Object.keys(files),
    divergencias: Object.entries(files).flatMap(([referencia, [, codigos]]) => codigos.map((codigo) => div(referencia, codigo))),
    escolas: new Map(Object.entries(files).flatMap(([referencia, [escola]]) => (escola === null ? [] : [[referencia, escola] as const]))),
  };
}

const counts = (resolvidas: number, persistentes: number, novas: number) => ({
  resolvidas,
  persistentes,
  novas,
  pendentes: persistentes + novas,
  grafia: 0,
});

describe('rounds are paired by the INEP code first', () => {
  it('files pre-named by position, shuffled and one renamed in round 2, pair by their codes with the true counts', async () => {
    const anterior = rodada({
      'retorno 1.json': ['11111111', ['A1', 'A2']],
      'retorno 2.json': ['22222222', ['B1']],
      'retorno 3.json': ['33333333', ['C1']],
      'retorno 4.json': ['44444444', ['D1']],
    });
    const atual = rodada({
      'retorno 1.json': ['22222222', ['B1', 'B2']],
      'retorno 2.json': ['11111111', ['A2']],
      'retorno 3.json': ['33333333', []],
      'retorno 4 (1).json': ['44444444', ['D1']],
    });
    const c = await compararRodadas(anterior, atual);
    expect(c.resumo).toEqual([
      { referencia: 'retorno 1.json', referencia_anterior: 'retorno 2.json', ...counts(0, 1, 1) },
      { referencia: 'retorno 2.json', referencia_anterior: 'retorno 1.json', ...counts(1, 1, 0) },
      { referencia: 'retorno 3.json', ...counts(1, 0, 0) },
      { referencia: 'retorno 4 (1).json', referencia_anterior: 'retorno 4.json', ...counts(0, 1, 0) },
    ]);
    expect(c.total).toEqual(counts(2, 3, 1));
    expect(c.referencias_sem_par).toEqual([]);
    // The rows are judged against the school's own earlier file.
    expect(c.comparacao.filter((l) => l.referencia === 'retorno 1.json').map((l) => [l.codigo_na_escola, l.situacao])).toEqual([
      ['B1', 'persistente'],
      ['B2', 'nova'],
    ]);
  });

  it('two files whose codes differ are two schools, though they share a name or a folder', async () => {
    const c = await compararRodadas(
      rodada({ 'retorno.json': ['11111111', ['A1']], 'escola-x/a.json': ['33333333', ['X1']] }),
      rodada({ 'retorno.json': ['22222222', ['B1']], 'escola-x/b.json': ['44444444', ['Y1']] }),
    );
    expect(c.resumo).toEqual([]);
    expect(c.referencias_sem_par).toEqual([
      { referencia: 'retorno.json', rodada: 'atual', motivo: 'sem_arquivo', erro: null },
      { referencia: 'escola-x/b.json', rodada: 'atual', motivo: 'sem_arquivo', erro: null },
      { referencia: 'retorno.json', rodada: 'anterior', motivo: 'sem_arquivo', erro: null },
      { referencia: 'escola-x/a.json', rodada: 'anterior', motivo: 'sem_arquivo', erro: null },
    ]);
  });

  it('a file without a code pairs by its name or folder, as before; a name already paired by code is not paired again', async () => {
    const c = await compararRodadas(
      rodada({ 'retorno 1.json': ['11111111', ['A1']], 'retorno 2.json': [null, ['B1']], 'escola-c/x.json': [null, ['C1']] }),
      rodada({ 'retorno 1.json': [null, ['Z1']], 'retorno 2.json': ['11111111', ['A1']], 'escola-c/y.json': ['33333333', ['C1']] }),
    );
    expect(c.resumo).toEqual([
      // retorno 1.json of round 1 is school 11111111, now called retorno 2.json: round 2's retorno 1.json has no pair.
      { referencia: 'retorno 2.json', referencia_anterior: 'retorno 1.json', ...counts(0, 1, 0) },
      { referencia: 'escola-c/y.json', referencia_anterior: 'escola-c/x.json', ...counts(0, 1, 0) },
    ]);
    expect(c.referencias_sem_par).toEqual([
      { referencia: 'retorno 1.json', rodada: 'atual', motivo: 'sem_arquivo', erro: null },
      { referencia: 'retorno 2.json', rodada: 'anterior', motivo: 'sem_arquivo', erro: null },
    ]);
  });

  it('a code two files of a round carry pairs neither by it: which is the school is unknown', async () => {
    const c = await compararRodadas(
      rodada({ 'a.json': ['11111111', ['A1']], 'b.json': ['22222222', ['B1']] }),
      rodada({ 'a.json': ['11111111', ['A1']], 'c.json': ['11111111', ['B1']] }),
    );
    expect(c.resumo).toEqual([{ referencia: 'a.json', ...counts(0, 1, 0) }]);
    expect(c.referencias_sem_par.map((s) => [s.referencia, s.rodada])).toEqual([
      ['c.json', 'atual'],
      ['b.json', 'anterior'],
    ]);
  });
});
