// The Retorno + txt tab (SPEC §3.4, §3.6): a return and its census .txt; the persons with a
// divergence as the corrected file writes them, the corrections it cannot apply, the task's
// XLSX/CSV, and the corrected file itself, with counts that agree with the table.
import { deleteCall } from './api.js';
import { boxes, guarded } from './chave.js';
import { el } from './table.js';
import { NAO_APLICADA } from './table-data.js';
import { downloadFrom, onTableFailure, panelButtons, plural, progressIn, runAndShow, runTask, task } from './tarefas.js';

const $ = (id) => document.getElementById(id);

const PESSOA_COLUMNS = [
  { key: 'codigo_na_escola', label: 'Código na escola' },
  { key: 'linha', label: 'Linha no txt' },
  // As the corrected file writes them (the answer's `arquivo_*`, SPEC §3.2), with the Receita's
  // value beside one the file keeps; `campo` is how the answer's `nao_aplicadas` names the field.
  { key: 'cpf', label: 'CPF', escrito: true, campo: 'CPF' },
  { key: 'nome', label: 'Nome', escrito: true, campo: 'Nome' },
  { key: 'data_nascimento', label: 'Data de nascimento', escrito: true, campo: 'Data de nascimento' },
  { key: 'inep', label: 'INEP', escrito: true, campo: 'INEP' },
  { key: 'nome_mae', label: 'Filiação 1 (nome da mãe)', escrito: true, campo: 'Filiação 1' },
  { key: 'regra_25', label: 'O INEP pode recusar (regra 25)', values: { true: 'Sim', false: 'Não' } },
  { key: 'nao_aplicadas', label: 'Não aplicadas (e por quê)' },
];

let pessoasSource = null;

function explainPessoas(total) {
  $('explica-pessoas').textContent =
    total === 0
      ? 'Nenhuma pessoa do .txt tem divergência com a Receita Federal: o arquivo corrigido seria igual ao enviado.'
      : `${plural(total, 'pessoa do .txt tem', 'pessoas do .txt têm')} divergência com a Receita Federal, uma por linha, com CPF, ` +
        'Nome, Data de nascimento, INEP e Filiação 1 exatamente como o arquivo corrigido os escreve (nome em maiúsculas, sem ' +
        'acentos; CPF e INEP só com números). Onde o arquivo mantém o valor do .txt, porque o INEP recusaria a troca, a célula diz ' +
        '“(não aplicada: Receita …)” com o valor da Receita Federal, e a coluna “Não aplicadas” diz a regra. “O INEP pode recusar ' +
        '(regra 25)” marca quem o arquivo corrige mesmo assim: confirme os dados dessas pessoas no formulário do Educacenso. ' +
        'Próximo passo: baixe o arquivo corrigido e importe-o no Educacenso.';
}

/** Which person and field each correction the file cannot apply is (SPEC §3.4), by name. */
function explainNaoAplicadas({ count, listed }) {
  $('nao-aplicadas').hidden = count === 0;
  $('explica-nao-aplicadas').textContent =
    count === 0
      ? ''
      : `${plural(count, 'correção não aplicada', 'correções não aplicadas')}: divergências que o arquivo corrigido não escreve ` +
        `(fora as só de grafia), com o motivo de cada uma${count > listed.length ? ` (as ${listed.length} primeiras abaixo)` : ''}. ` +
        'Confira-as no Educacenso:';
  $('lista-nao-aplicadas').replaceChildren(
    ...listed.map((item) => el('li', { text: `${item.codigo} (linha ${item.linha} do .txt) — ${item.campo}: ${item.valor}` })),
  );
}

async function verPessoas(form, progress) {
  const shown = await runAndShow('/api/retorno-rf', form, progress, {
    container: $('tabela-pessoas'),
    caption: 'Pessoas com divergência',
    columns: PESSOA_COLUMNS,
    textColumns: ['codigo_na_escola', 'nome', 'cpf'],
  });
  pessoasSource = shown.source;
  explainPessoas(shown.total);
  explainNaoAplicadas(shown.naoAplicadas);
  boxes.retorno.status(`${plural(shown.total, 'pessoa com divergência', 'pessoas com divergência')}.`);
  return { tarefa: shown.tarefa, form, pessoas: shown.total, corrigido: null };
}

/** The corrected file is its own task of the same files, started the first time it is asked for. */
async function baixarCorrigido(shown) {
  if (shown.corrigido === null) {
    const progress = progressIn($('progresso-corrigido'));
    try {
      shown.corrigido = await runTask('/api/censo-corrigido', shown.form, progress);
    } finally {
      progress.done();
    }
  }
  const headers = await downloadFrom(boxes.retorno, `/api/tarefas/${shown.corrigido.id}/resultado`, 'censo-corrigido.txt');
  const linhas = Number(headers.get('censo-pessoas-corrigidas'));
  const naoAplicadas = Number(headers.get('censo-correcoes-nao-aplicadas'));
  const regra25 = Number(headers.get('censo-pessoas-regra-25') ?? 0);
  const parado = shown.pessoas - linhas;
  $('contagens-corrigido').textContent =
    `Arquivo corrigido: ${plural(linhas, 'linha alterada', 'linhas alteradas')} de ${plural(shown.pessoas, 'pessoa', 'pessoas')} da tabela. ` +
    `Correções não aplicadas: ${naoAplicadas}` +
    (naoAplicadas
      ? ' (divergências que o arquivo não escreve, fora as só de grafia: a tabela marca cada uma com ' +
        `“${NAO_APLICADA.trim()}” e a coluna “Não aplicadas” diz o motivo)`
      : '') +
    '.' +
    (parado > 0
      ? ` ${plural(parado, 'pessoa não teve', 'pessoas não tiveram')} a linha alterada: só divergências que não são corrigidas automaticamente ` +
        '(filiação, Sexo, Cor/Raça) ou que não puderam ser aplicadas. Corrija-as no Educacenso.'
      : '') +
    (regra25 > 0
      ? ` ${plural(regra25, 'pessoa pode', 'pessoas podem')} ser recusada(s) pelo INEP por descaracterização (regra 25): o arquivo ` +
        'leva o nome e a data da Receita Federal; confirme os dados na coluna “O INEP pode recusar” e no formulário do Educacenso.'
      : '');
}

/** The tab's form, its downloads and the corrected file's button. */
export function initRetorno() {
  const pessoas = task({
    form: $('form-retorno'),
    box: boxes.retorno,
    results: [$('resultado-retorno')],
    buttons: panelButtons('painel-retorno'),
    clear: () => {
      pessoasSource?.close();
      pessoasSource = null;
      $('tabela-pessoas').replaceChildren();
      $('contagens-corrigido').textContent = '';
      $('explica-pessoas').textContent = '';
      $('nao-aplicadas').hidden = true;
      $('lista-nao-aplicadas').replaceChildren();
    },
  });
  $('form-retorno').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(boxes.retorno, () =>
      pessoas.run(async (form) => {
        const progress = progressIn($('form-retorno').querySelector('.progresso'));
        try {
          return await verPessoas(form, progress);
        } finally {
          progress.done();
        }
      }),
    );
  });
  for (const button of $('resultado-retorno').querySelectorAll('[data-baixar]')) {
    const format = button.dataset.baixar;
    button.addEventListener('click', () =>
      guarded(boxes.retorno, () =>
        pessoas.withShown((shown) =>
          downloadFrom(boxes.retorno, `/api/tarefas/${shown.tarefa.id}/resultado?format=${format}`, `pessoas.${format}`),
        ),
      ),
    );
  }
  $('baixar-corrigido').addEventListener('click', () => guarded(boxes.retorno, () => pessoas.withShown(baixarCorrigido)));
  // What was sent is the person's to delete (LGPD): the persons' task and the corrected file's, if made.
  $('apagar-retorno').addEventListener('click', () =>
    guarded(boxes.retorno, () =>
      pessoas.discard(async (shown) => {
        if (!window.confirm('Apagar este resultado (e o arquivo corrigido, se gerado) do serviço?')) return false;
        for (const tarefa of [shown.tarefa, shown.corrigido]) if (tarefa) await deleteCall(`/api/tarefas/${tarefa.id}`);
        boxes.retorno.status('Resultado apagado do serviço.');
        return true;
      }),
    ),
  );
  onTableFailure('tabela-pessoas', boxes.retorno);
}
