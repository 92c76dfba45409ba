// Issue 56: a divergence in how the census writes a value (`grafia`) persists round after round
// without anyone to act on it; the comparison counts it apart from what is pending.
import { describe, expect, it } from 'vitest';
import { compararRodadas, type DivergenciaRodada, type Rodada } from '@censo/shared';

const div = (codigo: string, chave: DivergenciaRodada['chave'], correcao: DivergenciaRodada['correcao']): DivergenciaRodada => ({
  referencia: 'escola-a',
  codigo_na_escola: codigo,
  campo: chave === 'nome' ? 'Nome completo' : 'Número do CPF',
  enviado: 'x',
  correto: 'y',
  chave,
  correcao,
});
const rodada = (divergencias: DivergenciaRodada[]): Rodada => ({ referencias: ['escola-a'], divergencias });

describe('the comparison counts grafia apart from what is pending', () => {
  it('a persisting and a new grafia are grafia; the rest, and a row without correcao, pending; resolved ones neither', async () => {
    const anterior = rodada([div('A1', 'nome', 'grafia'), div('A2', 'cpf', 'formulario'), div('A3', 'cpf', 'arquivo')]);
    const atual = rodada([
      div('A1', 'nome', 'grafia'), // persists, nothing to do
      div('A2', 'cpf', 'formulario'), // persists, pending
      div('A4', 'nome', 'grafia'), // new, nothing to do
      div('A5', 'cpf', null), // new, from a result before correcao: unknown, so pending
    ]);
    const c = await compararRodadas(anterior, atual);
    const counts = { resolvidas: 1, persistentes: 2, novas: 2, pendentes: 2, grafia: 2 };
    expect(c.resumo).toEqual([{ referencia: 'escola-a', ...counts }]);
    expect(c.total).toEqual(counts);
    // Every row of the later round is one or the other.
    expect(c.total.pendentes + c.total.grafia).toBe(c.total.persistentes + c.total.novas);
  });

  it('the later round’s correcao decides: a grafia that became a real difference is pending', async () => {
    const c = await compararRodadas(rodada([div('A1', 'nome', 'grafia')]), rodada([div('A1', 'nome', 'formulario')]));
    expect(c.total).toEqual({ resolvidas: 0, persistentes: 1, novas: 0, pendentes: 1, grafia: 0 });
  });
});
