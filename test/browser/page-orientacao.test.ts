// The page's mirror of "O que fazer" (services/api/web/orientacao.js, plain browser JavaScript that
// cannot import the core) against the core's own orientacao() (SPEC §11): every `chave`, every
// `correcao` and values of every shape get the same sentence, so the page's Divergências table and
// the XLSX never say two things.
import { describe, expect, it } from 'vitest';
import { CORRECOES, orientacao, type Chave, type Correcao } from '@censo/shared';

interface PageOrientacao {
  orientacao: (d: { chave: Chave | null; enviado: string; correto: string; correcao: Correcao }) => string;
}
// A path held in a variable: the module is the page's JavaScript, outside the typed projects.
const PAGE_MODULE = '../../services/api/web/orientacao.js';
const page = (await import(PAGE_MODULE)) as PageOrientacao;

const CHAVES: Array<Chave | null> = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai', null];
const VALUES = [
  '',
  ' ',
  'X',
  '1234',
  '52998224725',
  '529.982.247-25',
  '123456789012',
  '15/03/2014',
  '31/02/2014',
  'ANA SILVA',
  "Ana d'Ávila",
];

describe("the page's O que fazer", () => {
  it('says what the core says for every chave, correcao, sent and Receita value', () => {
    const differ: string[] = [];
    for (const chave of CHAVES)
      for (const correcao of CORRECOES)
        for (const enviado of VALUES)
          for (const correto of VALUES) {
            const d = { chave, enviado, correto, correcao };
            if (page.orientacao(d) !== orientacao(d)) differ.push(JSON.stringify(d));
          }
    expect(differ).toEqual([]);
    expect(CORRECOES).toHaveLength(5);
  });
});
