// What to do about a divergence, in the words every output uses (SPEC §11: the XLSX's "O que
// fazer"), so the page's Divergências table can show it beside "Como corrigir". A mirror of
// orientacao() in shared/src/core/reimportacao/correcao.ts, which the page cannot import;
// test/browser/page-orientacao.test.ts compares the two on every kind of divergence.
import { WRITERS } from './inep-values.js';

/** The sentence for a divergence (`chave`, `enviado`, `correto`, `correcao`); '' for one without `correcao`. */
export function orientacao(d) {
  const chave = d.chave ?? null;
  const writer = chave === null ? undefined : WRITERS[chave];
  switch (d.correcao) {
    case 'arquivo':
      return 'O arquivo corrigido leva o valor da Receita Federal e o INEP o aceita; corrija também no sistema da escola.';
    case 'educacenso':
      return (
        'O INEP já gravou na filiação 1 o nome da mãe que a Receita Federal tem (regra 4 da filiação), e o arquivo ' +
        'corrigido leva o mesmo nome: corrija só no sistema da escola.'
      );
    case 'grafia':
      return 'Só muda a grafia (acentos, maiúsculas, pontuação ou espaços): como o censo escreve, os valores são iguais e não há o que corrigir.';
    case 'receita':
      if (chave === 'nome_pai')
        return (
          'A Receita Federal não guarda o nome do pai e o arquivo corrigido não altera a filiação 2: confira o nome com a ' +
          'família e corrija no sistema da escola e no formulário do Educacenso.'
        );
      if (chave === 'nome_mae')
        return 'O nome da mãe que a Receita Federal tem não cabe no layout do INEP: o cidadão precisa atualizar o cadastro do CPF na Receita Federal.';
      return 'O valor da Receita Federal não cabe no layout do INEP: o cidadão precisa atualizar o cadastro do CPF na Receita Federal.';
    case 'formulario': {
      if (chave === null) return 'O arquivo corrigido não altera este campo: corrija no sistema da escola e no formulário do Educacenso.';
      const correto = String(d.correto ?? '');
      if (chave === 'cpf' && String(d.enviado ?? '').trim() !== '' && WRITERS.cpf(correto) !== null)
        return 'O Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF): corrija no formulário do Educacenso.';
      if (writer !== undefined && writer(correto) === null)
        return 'O valor da Receita Federal não cabe no layout do INEP: confira e corrija no formulário do Educacenso.';
      return (
        'Confirme no formulário do Educacenso: com as demais divergências desta pessoa, o INEP pode recusá-la por ' +
        'descaracterização (regra 25) ou, se ela foi enviada sem CPF, não atualizar este dado (regra 8 do CPF).'
      );
    }
    default:
      return '';
  }
}
