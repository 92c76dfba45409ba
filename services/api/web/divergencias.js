// The Divergências tab (SPEC §3.6): one return's divergences with the tax authority as a table,
// with counts that agree with it and the task's XLSX/CSV; several returns go as one batch (§7.3),
// each file named by its school, whose summary and comparison are on the Lotes tab (§10).
import { ApiError, deleteCall, fileSafe, follow, getJson, postForm, postJson } from './api.js';
import { boxes, guarded } from './chave.js';
import { TIPOS } from './lotes.js';
import { el } from './table.js';
import { downloadFrom, ESTADO, LIMITE, onTableFailure, panelButtons, plural, progressIn, runAndShow, task, tooBig } from './tarefas.js';

const $ = (id) => document.getElementById(id);
/** The words for a divergence's `chave` (SPEC §2): the summary's kinds, `outro` being a null `chave`. */
const DADO = Object.fromEntries(TIPOS.map(({ key, label }) => [key === 'outro' ? 'null' : key, label]));
/** The words of a divergence's `correcao` (SPEC §11), as the spreadsheets write them. */
const CORRECAO = {
  arquivo: 'Arquivo corrigido',
  educacenso: 'Já no Educacenso',
  formulario: 'Formulário do Educacenso',
  receita: 'Cidadão na Receita Federal',
  grafia: 'Só grafia',
};
const DIVERGENCIA_COLUMNS = [
  { key: 'codigo_na_escola', label: 'Código na escola' },
  { key: 'linha', label: 'Linha no txt' },
  { key: 'campo', label: 'Campo no retorno' },
  { key: 'enviado', label: 'Valor enviado' },
  { key: 'correto', label: 'Valor da Receita Federal' },
  { key: 'chave', label: 'Dado', values: DADO },
  { key: 'is_filiacao', label: 'Filiação', values: { true: 'Sim', false: 'Não' } },
  // Whether the corrected file applies it (SPEC §3.4 and §11: what its `correcao` says).
  { key: 'corrigido', label: 'No arquivo corrigido', aplicada: true },
  // Where it gets fixed, and by whom, and what to do (SPEC §11): long words, so they wrap.
  { key: 'correcao', label: 'Como corrigir', values: CORRECAO, quebra: true },
  { key: 'o_que_fazer', label: 'O que fazer', orientacao: true, quebra: true },
];

let divergenciasSource = null;

/**
 * `corrigido`: how many rows the corrected file applies ('Sim') and leaves out; `correcao`: how
 * many each way of fixing takes (SPEC §11), both from the table's own columns.
 */
function explainDivergencias(total, corrigido, correcao) {
  const applied = corrigido.find(([word]) => word === 'Sim')?.[1] ?? 0;
  // `educacenso` rows are written too (filiação 1), but nothing changes in the re-import.
  const arquivo = applied - (correcao.find(([word]) => word === CORRECAO.educacenso)?.[1] ?? 0);
  const by = (key) => correcao.find(([word]) => word === CORRECAO[key])?.[1] ?? 0;
  const ways = [
    [by('formulario'), 'só no formulário do Educacenso (o INEP recusaria a troca por arquivo)'],
    [by('educacenso'), 'já estão no Educacenso (o INEP gravou o nome da mãe da Receita Federal, e o arquivo corrigido leva o mesmo)'],
    [by('receita'), 'pelo cidadão, na Receita Federal'],
    [by('grafia'), 'só de grafia: nada a corrigir'],
  ].filter(([n]) => n > 0);
  $('explica-divergencias').textContent =
    total === 0
      ? 'Nenhuma divergência com a Receita Federal neste retorno: não há nada a corrigir.'
      : `${plural(total, 'divergência', 'divergências')}, uma por linha da tabela. ` +
        `${plural(arquivo, 'é corrigida', 'são corrigidas')} automaticamente no arquivo corrigido, que o INEP aceita ` +
        '(aba “Retorno + txt”). ' +
        (ways.length > 0 ? `Das outras: ${ways.map(([n, how]) => `${n.toLocaleString('pt-BR')} ${how}`).join('; ')}. ` : '') +
        'A coluna “Como corrigir” diz, linha a linha, quem corrige e onde. Baixe a planilha para trabalhar nela.';
}

async function verDivergencias(file, progress) {
  const form = new FormData();
  form.set('retorno', file);
  const shown = await runAndShow('/api/divergencias-rf', form, progress, {
    container: $('tabela-divergencias'),
    caption: 'Divergências com a Receita Federal',
    columns: DIVERGENCIA_COLUMNS,
    textColumns: ['codigo_na_escola', 'campo', 'enviado', 'correto', 'correcao', 'o_que_fazer'],
    groupColumn: 'chave',
    tallyColumns: ['corrigido', 'correcao'],
    selectColumns: ['correcao'],
  });
  divergenciasSource = shown.source;
  explainDivergencias(shown.total, shown.tallies.corrigido, shown.tallies.correcao);
  boxes.divergencias.status(`${plural(shown.total, 'divergência encontrada', 'divergências encontradas')}.`);
  return { tarefa: shown.tarefa };
}

// A batch: several returns at once (SPEC §7.3) ---------------------------------------------------

/** `<batch or school>-<what>.<format>`, sanitised for a file system; null when there is no name to give. */
export const downloadName = (nome, what) => (fileSafe(nome) ? `${fileSafe(nome)}-${what}` : null);

/** A file's name without its extension: the school it is, until the person says otherwise. */
const baseName = (name) => name.replace(/\.[^.]*$/, '') || name;

/** The folder a file came from (`escolas/escola-a/retorno.json` → `escola-a`), when a folder was chosen; else ''. */
const folderOf = (path) => path.split('/').slice(0, -1).pop() ?? '';

/**
 * Each file's school until the person types another: its folder's name when a folder was chosen
 * (INEP names every school's file alike; the folder is the school), else the file's name. Every
 * file needs a school of its own, so names that repeat get a number (`retorno 1`, `retorno 2`):
 * a batch of identically named files can be sent as it is.
 */
export function defaultReferencias(files, paths) {
  const first = files.map((file, i) => folderOf(paths[i] ?? '') || baseName(file.name));
  const times = new Map();
  for (const name of first) times.set(name, (times.get(name) ?? 0) + 1);
  const used = new Set(first.filter((name) => times.get(name) === 1));
  const next = new Map();
  return first.map((name) => {
    if (times.get(name) === 1) return name;
    let n = next.get(name) ?? 1;
    while (used.has(`${name} ${n}`)) n++;
    next.set(name, n + 1);
    used.add(`${name} ${n}`);
    return `${name} ${n}`;
  });
}

/**
 * One "school" field per chosen file, when there are several (each file's `referencia`);
 * `paths`: each file's path inside the folder chosen, '' when files were chosen one by one.
 */
function schoolFields(files, paths) {
  const defaults = defaultReferencias(files, paths);
  const several = files.length > 1;
  $('escolas-lote').hidden = !several;
  $('escolas-arquivos').replaceChildren(
    ...(several
      ? files.map((file, i) => {
          const id = `escola-arquivo-${i}`;
          const input = el('input', { id, type: 'text', maxlength: '200', required: '' });
          input.value = defaults[i];
          // A folder's files share names: the label says which folder each one came from.
          const shown = paths[i] || file.name;
          return el('div', { class: 'escola-arquivo' }, el('label', { for: id, text: `Escola do arquivo ${shown}` }), input);
        })
      : []),
  );
}

/**
 * Each file's `referencia`: the school typed beside it. Every file needs one, and a different
 * one: the summary has a row per school and the comparison pairs rounds by it.
 */
function referenciasOf(files) {
  const seen = new Map();
  return files.map((file, i) => {
    const input = $(`escola-arquivo-${i}`);
    const referencia = input.value.trim();
    const refuse = (text) => {
      input.focus();
      throw new ApiError(400, text);
    };
    if (referencia === '') refuse(`Informe a escola do arquivo ${file.name}.`);
    if (seen.has(referencia))
      refuse(`Dois arquivos com a mesma escola (${referencia}): ${seen.get(referencia)} e ${file.name}. Dê a cada arquivo a sua.`);
    seen.set(referencia, file.name);
    return referencia;
  });
}

function showLote(tarefas, files, referencias) {
  const byName = new Map(tarefas.map((t) => [t.referencia, t]));
  $('lote-arquivos').replaceChildren(
    ...files.map((file, i) => {
      const tarefa = byName.get(referencias[i]);
      let state = tarefa ? (ESTADO[tarefa.estado] ?? tarefa.estado) : 'Enviando';
      if (tarefa?.estado === 'falhou') state += `: ${tarefa.erro.erro}`;
      // The school first: files from several schools often share one name.
      return el('li', {}, el('strong', { text: referencias[i] }), ` (${file.name}) — ${state}`);
    }),
  );
}

async function verLote(files, referencias, nome, progress) {
  for (const file of files) {
    if (file.size > LIMITE) throw tooBig(file);
  }
  const total = files.reduce((sum, f) => sum + f.size, 0);
  const named = nome.trim() || `Página: ${files.length} retornos`;
  const lote = await postJson('/api/lotes', { nome: named });
  $('resultado-lote').hidden = false;
  $('ver-resumo-lote').hidden = true;
  $('explica-lote').textContent = `Lote de ${plural(files.length, 'arquivo', 'arquivos')}: o estado de cada um aparece abaixo.`;
  showLote([], files, referencias);
  let before = 0;
  for (const [i, file] of files.entries()) {
    const one = new FormData();
    one.set('referencia', referencias[i]);
    one.set('retorno', file);
    await postForm(`/api/lotes/${lote.id}/divergencias-rf`, one, { onProgress: (loaded) => progress.sent(before + loaded, total) });
    before += file.size;
  }
  await postJson(`/api/lotes/${lote.id}/fechar`);
  const tarefasOf = async () => (await getJson(`/api/lotes/${lote.id}/tarefas?limit=1000`)).tarefas;
  // Each file's state as the batch runs; a list that arrives after a newer one is dropped.
  let asked = 0;
  let drawn = 0;
  const refresh = async () => {
    const mine = ++asked;
    const tarefas = await tarefasOf();
    if (mine > drawn) {
      drawn = mine;
      showLote(tarefas, files, referencias);
    }
  };
  const ended = await follow(
    `/api/lotes/${lote.id}`,
    (m) => {
      progress.state(m.estado === 'processando' ? 'processando' : 'aguardando');
      refresh().catch(() => {}); // the final list below reports any failure
    },
    (m) => m.estado === 'concluido' || m.estado === 'cancelado',
    // Each look also lists the batch's tasks: no need to look as often as at one task.
    { min: 250 },
  );
  await refresh();
  const { concluida, falhou } = ended.tarefas;
  $('explica-lote').textContent =
    `Lote concluído: ${plural(concluida, 'arquivo lido', 'arquivos lidos')}` +
    (falhou ? `, ${plural(falhou, 'com erro', 'com erro')} (motivo ao lado de cada um)` : '') +
    '. A planilha combinada traz as divergências de todos, com o arquivo de origem em cada linha; o resumo mostra cada escola.';
  $('ver-resumo-lote').hidden = ended.estado !== 'concluido';
  boxes.divergencias.status(`Lote concluído: ${files.length} arquivos.`);
  return { lote: lote.id, nome: named };
}

// Wiring -------------------------------------------------------------------------------------

/**
 * The tab's form, its downloads and the batch's "Ver resumo", which opens the Lotes tab
 * (`selectTab`) on this batch (`lotes`, initLotes' answer).
 */
export function initDivergencias({ lotes, selectTab }) {
  const divergencias = task({
    form: $('form-divergencias'),
    box: boxes.divergencias,
    results: [$('resultado-divergencias'), $('resultado-lote')],
    buttons: panelButtons('painel-divergencias'),
    clear: () => {
      divergenciasSource?.close();
      divergenciasSource = null;
      $('tabela-divergencias').replaceChildren();
      $('explica-divergencias').textContent = '';
      $('lote-arquivos').replaceChildren();
    },
  });
  // A folder chosen whole: its returns become the input's choice, each remembered with its path
  // (the school's folder), which a copy into another input does not keep.
  let picked = null;
  $('pasta-divergencias').addEventListener('change', () => {
    const folder = $('pasta-divergencias');
    const files = [...folder.files].filter((file) => /\.(json|xlsx)$/i.test(file.name));
    const chosen = new DataTransfer();
    for (const file of files) chosen.items.add(file);
    picked = files.map((file) => file.webkitRelativePath);
    folder.value = '';
    $('retorno-divergencias').files = chosen.files;
    $('retorno-divergencias').dispatchEvent(new Event('change', { bubbles: true }));
  });
  $('retorno-divergencias').addEventListener('change', () => {
    const files = [...$('retorno-divergencias').files];
    const paths = picked?.length === files.length ? picked : files.map((file) => file.webkitRelativePath ?? '');
    picked = null;
    schoolFields(files, paths);
  });
  $('form-divergencias').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(boxes.divergencias, () => {
      // Checked while the fields can still take focus (a running task disables the form).
      const chosen = [...$('retorno-divergencias').files];
      const referencias = chosen.length > 1 ? referenciasOf(chosen) : null;
      return divergencias.run(async (form) => {
        const files = form.getAll('retorno');
        const progress = progressIn($('form-divergencias').querySelector('.progresso'));
        try {
          return referencias !== null && files.length > 1
            ? await verLote(files, referencias, form.get('nome-lote') ?? '', progress)
            : await verDivergencias(files[0], progress);
        } finally {
          progress.done();
        }
      });
    });
  });
  for (const button of $('resultado-divergencias').querySelectorAll('[data-baixar]')) {
    const format = button.dataset.baixar;
    button.addEventListener('click', () =>
      guarded(boxes.divergencias, () =>
        divergencias.withShown((shown) =>
          downloadFrom(boxes.divergencias, `/api/tarefas/${shown.tarefa.id}/resultado?format=${format}`, `divergencias.${format}`),
        ),
      ),
    );
  }
  for (const button of $('resultado-lote').querySelectorAll('[data-baixar-lote]')) {
    const format = button.dataset.baixarLote;
    button.addEventListener('click', () =>
      guarded(boxes.divergencias, () =>
        divergencias.withShown((shown) =>
          downloadFrom(
            boxes.divergencias,
            `/api/lotes/${shown.lote}/divergencias?format=${format}`,
            `divergencias.${format}`,
            downloadName(shown.nome, `divergencias.${format}`),
          ),
        ),
      ),
    );
  }
  $('ver-resumo-lote').addEventListener('click', () =>
    divergencias.withShown(async (shown) => {
      selectTab($('aba-lotes'), { load: false });
      await lotes.show(shown.lote);
    }),
  );
  // What was sent is the person's to delete (LGPD): the task or the batch, and what it put on screen.
  for (const button of document.querySelectorAll('#resultado-divergencias [data-apagar], #resultado-lote [data-apagar]')) {
    button.addEventListener('click', () =>
      guarded(boxes.divergencias, () =>
        divergencias.discard(async (shown) => {
          const question = shown.lote ? 'Apagar este lote e todos os seus resultados do serviço?' : 'Apagar este resultado do serviço?';
          if (!window.confirm(question)) return false;
          await (shown.lote ? deleteCall(`/api/lotes/${shown.lote}`) : deleteCall(`/api/tarefas/${shown.tarefa.id}`));
          if (shown.lote) lotes.forget(shown.lote);
          boxes.divergencias.status(shown.lote ? 'Lote apagado do serviço.' : 'Resultado apagado do serviço.');
          return true;
        }),
      ),
    );
  }
  document.addEventListener('lote-apagado', (e) => void divergencias.discard(async (shown) => shown.lote === e.detail));
  onTableFailure('tabela-divergencias', boxes.divergencias);
}
