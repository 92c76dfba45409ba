// A return written for a test: one row per divergence (record 30, a message citing the Receita
// Federal), the i-th on txt line i + 2, as JSON. The round-comparison suites (CLI and API) build
// their schools' returns from these.
export type Linha = [codigo: string, campo: string, conteudo: string];

export const CPF = 'Número do CPF';
export const NOME = 'Nome completo';

export const retorno = (linhas: readonly Linha[]): string =>
  JSON.stringify(
    linhas.map(([codigo, campo, conteudo], i) => ({
      Registro: '30',
      Linha: String(i + 2),
      'Código na Escola': codigo,
      Campo: campo,
      Mensagem: 'Dado divergente da base da Receita Federal',
      Conteúdo: conteudo,
    })),
  );
