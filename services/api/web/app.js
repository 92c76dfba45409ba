// The staff page (SPEC §3.6): the key once per tab (or the signed-in session, §8), the tasks,
// every error with the service's own `erro`, in the panel of the task it belongs to. Each set of
// files is uploaded once, as an asynchronous task (§7.1); the table, the counts and every
// download come from that task, so nothing on screen can belong to files other than the ones
// chosen. Several returns go as one batch (§7.3), whose summary and comparison are on the Lotes
// tab (§10). eMAG 3.1's access bar is access-bar.js.
import { initAccessBar } from './access-bar.js';
import { ApiError, apiErrorOf, filenameOf, follow, getBlob, getHeaders, getJson, key, postForm, postJson, save, startTask } from './api.js';
import { initLotes, TIPOS } from './lotes.js';
import { messages, messagesIn } from './messages.js';
import { el, renderTable, tableWorker } from './table.js';
import { NAO_APLICADA } from './table-data.js';
import { signedIn } from './session.js';

const $ = (id) => document.getElementById(id);
/** The words for a divergence's `chave` (SPEC §2): the summary's kinds, `outro` being a null `chave`. */
const DADO = Object.fromEntries(TIPOS.map(({ key, label }) => [key === 'outro' ? 'null' : key, label]));
/** The words of a divergence's `correcao` (SPEC §11), as the spreadsheets write them. */
const CORRECAO = {
  arquivo: 'Arquivo corrigido',
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
  // Where it gets fixed, and by whom (SPEC §11).
  { key: 'correcao', label: 'Como corrigir', values: CORRECAO },
];
const PESSOA_COLUMNS = [
  { key: 'codigo_na_escola', label: 'Código na escola' },
  { key: 'linha', label: 'Linha no txt' },
  // As the corrected file writes them (SPEC §3.4), not as the tax authority's return spelled them.
  { key: 'cpf', label: 'CPF', escrito: true },
  { key: 'nome', label: 'Nome', escrito: true },
  { key: 'data_nascimento', label: 'Data de nascimento', escrito: true },
  { key: 'inep', label: 'INEP', escrito: true },
  { key: 'nome_mae', label: 'Nome da mãe' },
];
const ESTADO = {
  aguardando: 'Na fila',
  processando: 'Processando',
  concluida: 'Concluída',
  falhou: 'Falhou',
  cancelada: 'Cancelada',
};
const MB = 1024 * 1024;
const LIMITE = 25 * MB;

const plural = (n, one, many) => `${n.toLocaleString('pt-BR')} ${n === 1 ? one : many}`;
const mb = (bytes) => (bytes / MB).toLocaleString('pt-BR', { maximumFractionDigits: 1 });

/** The key's and the page's own messages, under the header. */
const header = messages($('status'), $('erro'));
/** Each task's messages, in its own panel. */
const boxes = {
  divergencias: messagesIn($('painel-divergencias')),
  retorno: messagesIn($('painel-retorno')),
  lotes: messagesIn($('painel-lotes')),
  consultas: messagesIn($('painel-consultas')),
};

/** `err` said in `box`; a refused key is asked for again. */
function showError(err, box) {
  box.error(err);
  if (err instanceof ApiError && err.status === 401 && !signedIn()) askKey();
}

// The key ------------------------------------------------------------------------------------

function askKey() {
  key.clear();
  $('chave').value = '';
  $('chave').disabled = false;
  $('entrar').disabled = false;
  $('sair').hidden = true;
  $('chave').focus();
}

/** The key is kept: its field locks and focus moves on to the task, never to <body>. */
function keyEntered({ moveFocus = false } = {}) {
  $('chave').value = '';
  $('chave').disabled = true;
  $('entrar').disabled = true;
  $('sair').hidden = false;
  if (moveFocus) document.querySelector('[role="tabpanel"]:not([hidden]) input, [role="tabpanel"]:not([hidden]) select')?.focus();
}

/** A key typed and not entered is the key used (SPEC §3.6): it becomes the tab's key. */
function adoptTypedKey() {
  if (!$('chave').disabled && key.set($('chave').value)) keyEntered();
}

/** Runs an action with its errors shown in `box` (its panel's) and the status line kept honest. */
async function guarded(box, action) {
  box.clear();
  header.clear();
  adoptTypedKey();
  if (!key.get() && !signedIn()) {
    // About the key: said beside it, where the person goes next.
    header.tell('Informe a chave de acesso no alto da página e tente de novo.');
    askKey();
    return;
  }
  try {
    await action();
  } catch (err) {
    showError(err, box);
  }
}

// Progress -------------------------------------------------------------------------------------

/**
 * The bar of one form and the words beside it: the upload's percentage, size and (when slow)
 * the time left, then the task's state and the seconds since it was sent.
 */
function progressIn(box) {
  const bar = box.querySelector('progress');
  const words = box.querySelector('.progresso-texto');
  const started = Date.now();
  let timer = null;
  box.hidden = false;
  bar.value = 0;
  words.textContent = 'Enviando…';
  const seconds = () => Math.round((Date.now() - started) / 1000);
  const stopTimer = () => timer !== null && (clearInterval(timer), (timer = null));
  return {
    sent(loaded, total) {
      bar.value = Math.round((loaded / total) * 100);
      let text = `Enviando: ${bar.value}% (${mb(loaded)} de ${mb(total)} MB)`;
      const elapsed = (Date.now() - started) / 1000;
      const left = loaded > 0 ? ((total - loaded) * elapsed) / loaded : Infinity;
      // Only worth saying when the wait is noticeable.
      if (elapsed >= 2 && left >= 3 && Number.isFinite(left)) text += ` — faltam cerca de ${Math.ceil(left)} s`;
      words.textContent = text;
    },
    state(estado) {
      bar.removeAttribute('value'); // indeterminate: the service gives no percentage
      const say = () => (words.textContent = `${ESTADO[estado] ?? estado}… ${seconds()} s`);
      say();
      stopTimer();
      timer = setInterval(say, 1000);
    },
    loading() {
      stopTimer();
      words.textContent = `Carregando o resultado… ${seconds()} s`;
    },
    done() {
      stopTimer();
      box.hidden = true;
      words.textContent = '';
    },
  };
}

/** The service's own 413 (SPEC §5), said before a byte is sent, with the file's name. */
const tooBig = (file) => new ApiError(413, `Arquivo excede o limite de 25 MB: ${file.name}. Escolha um arquivo menor.`);

/** Sends `form` to `route` as a task and follows it to its end; resolves with the concluded monitor. */
async function runTask(route, form, progress) {
  for (const value of form.values()) {
    if (value instanceof File && value.size > LIMITE) throw tooBig(value);
  }
  const monitor = await startTask(route, form, (loaded, total) => progress.sent(loaded, total));
  const ended = await follow(`/api/tarefas/${monitor.id}`, (m) => progress.state(m.estado));
  if (ended.estado === 'falhou') throw new ApiError(ended.erro.status, ended.erro.erro);
  if (ended.estado !== 'concluida') throw new ApiError(409, 'A tarefa foi cancelada. Envie os arquivos de novo.');
  return ended;
}

// One task of the page -------------------------------------------------------------------------

/**
 * One form and the result it shows (SPEC §3.6: nothing on screen belongs to files other than
 * those chosen). `shown` is what the result on screen came from (its task and the files sent):
 * the only thing a download may use, so a download never uses files the inputs no longer hold.
 * Choosing files, a new run or an error clears the result. While work runs, the form and
 * `buttons` are disabled, so a second click cannot start a second upload.
 */
function task({ form, box, results, buttons, clear }) {
  let shown = null;
  let running = false;

  function reset() {
    shown = null;
    for (const result of results) result.hidden = true;
    clear();
  }

  async function request(action) {
    if (running) return;
    running = true;
    const controls = [...form.elements, ...buttons()];
    for (const control of controls) control.disabled = true;
    try {
      await action();
    } catch (err) {
      reset();
      throw err;
    } finally {
      for (const control of controls) control.disabled = false;
      running = false;
    }
  }

  const edited = () => {
    if (running) return;
    reset();
    box.clear();
    box.status('');
  };
  form.addEventListener('input', edited);
  form.addEventListener('change', edited);

  return {
    /** Clears the result, sends what the inputs hold now, shows what `work(form)` answers. */
    run(work) {
      // Captured before the form is disabled: a disabled input is left out of its FormData.
      const sent = new FormData(form);
      return request(async () => {
        reset();
        shown = await work(sent);
      });
    },
    /** Runs `action` with what produced the result on screen; nothing when there is none. */
    withShown: (action) => (shown === null ? Promise.resolve() : request(() => action(shown))),
    request,
  };
}

async function downloadFrom(box, path, fallback) {
  const { blob, headers } = await getBlob(path);
  const name = filenameOf(headers.get('content-disposition'), fallback);
  save(blob, name);
  box.status(`Arquivo ${name} baixado.`);
  return headers;
}

/**
 * Runs a list task and shows its JSON result as a table: its first screen page as soon as it
 * arrives (parsed in a worker started with the upload, so it is ready when the job ends), the
 * rest while it loads. Resolves once every row is in, with the task, the source and the counts.
 */
async function runAndShow(route, form, progress, table) {
  const worker = tableWorker();
  let tarefa;
  try {
    tarefa = await runTask(route, form, progress);
  } catch (err) {
    worker.close();
    throw err;
  }
  progress.loading();
  return { tarefa, ...(await showResult(tarefa, worker, table)) };
}

/** Shows a concluded task's result, read by `worker` (see runAndShow). */
async function showResult(tarefa, worker, { container, caption, columns, textColumns, groupColumn, tallyColumns }) {
  let source;
  try {
    source = await worker.source(`/api/tarefas/${tarefa.id}/resultado`, getHeaders(), columns, { textColumns, groupColumn, tallyColumns });
  } catch (err) {
    throw err instanceof Error ? err : apiErrorOf(err);
  }
  container.parentElement.hidden = false;
  const table = renderTable(container, { caption, columns, source, textColumns, groupColumn });
  try {
    const all = await table.ready;
    return { source, ...all };
  } catch (err) {
    source.close();
    throw err instanceof Error ? err : apiErrorOf(err);
  }
}

// Divergências ---------------------------------------------------------------------------------

let divergenciasSource = null;
let pessoasSource = null;

/**
 * `corrigido`: how many rows the corrected file applies ('Sim') and leaves out; `correcao`: how
 * many each way of fixing takes (SPEC §11), both from the table's own columns.
 */
function explainDivergencias(total, corrigido, correcao) {
  const applied = corrigido.find(([word]) => word === 'Sim')?.[1] ?? 0;
  const by = (key) => correcao.find(([word]) => word === CORRECAO[key])?.[1] ?? 0;
  const ways = [
    [by('formulario'), 'só no formulário do Educacenso (o INEP recusaria a troca por arquivo)'],
    [by('receita'), 'pelo cidadão, na Receita Federal (ou o INEP já usa o valor da Receita)'],
    [by('grafia'), 'só de grafia: nada a corrigir'],
  ].filter(([n]) => n > 0);
  $('explica-divergencias').textContent =
    total === 0
      ? 'Nenhuma divergência com a Receita Federal neste retorno: não há nada a corrigir.'
      : `${plural(total, 'divergência', 'divergências')}, uma por linha da tabela. ` +
        `${plural(applied, 'é corrigida', 'são corrigidas')} automaticamente no arquivo corrigido, que o INEP aceita ` +
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
    textColumns: ['codigo_na_escola', 'campo', 'enviado', 'correto'],
    groupColumn: 'chave',
    tallyColumns: ['corrigido', 'correcao'],
  });
  divergenciasSource = shown.source;
  explainDivergencias(shown.total, shown.tallies.corrigido, shown.tallies.correcao);
  boxes.divergencias.status(`${plural(shown.total, 'divergência encontrada', 'divergências encontradas')}.`);
  return { tarefa: shown.tarefa };
}

// A batch: several returns at once (SPEC §7.3) ---------------------------------------------------

/** A file's name without its extension: the school it is, until the person says otherwise. */
const baseName = (name) => name.replace(/\.[^.]*$/, '') || name;

/** One "school" field per chosen file, when there are several (each file's `referencia`). */
function schoolFields(files) {
  const several = files.length > 1;
  $('escolas-lote').hidden = !several;
  $('escolas-arquivos').replaceChildren(
    ...(several
      ? files.map((file, i) => {
          const id = `escola-arquivo-${i}`;
          const input = el('input', { id, type: 'text', maxlength: '200', required: '' });
          input.value = baseName(file.name);
          return el('div', { class: 'escola-arquivo' }, el('label', { for: id, text: `Escola do arquivo ${file.name}` }), input);
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
      return el('li', {}, el('strong', { text: file.name }), ` — ${state}`);
    }),
  );
}

async function verLote(files, referencias, nome, progress) {
  for (const file of files) {
    if (file.size > LIMITE) throw tooBig(file);
  }
  const total = files.reduce((sum, f) => sum + f.size, 0);
  const lote = await postJson('/api/lotes', { nome: nome.trim() || `Página: ${files.length} retornos` });
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
  return { lote: lote.id };
}

// Retorno + txt ---------------------------------------------------------------------------------

function explainPessoas(total) {
  $('explica-pessoas').textContent =
    total === 0
      ? 'Nenhuma pessoa do .txt tem divergência com a Receita Federal: o arquivo corrigido seria igual ao enviado.'
      : `${plural(total, 'pessoa do .txt tem', 'pessoas do .txt têm')} divergência com a Receita Federal, uma por linha, com CPF, ` +
        'Nome, Data de nascimento e INEP como o arquivo corrigido os escreve (nome em maiúsculas, sem acentos; CPF e INEP só com ' +
        'números). Nome da mãe é o do .txt: filiação, Sexo e Cor/Raça não são corrigidos automaticamente (corrija-os no ' +
        'Educacenso). Próximo passo: baixe o arquivo corrigido e importe-o no Educacenso.';
}

/** Which person and field each correction the file cannot apply is (SPEC §3.4), by name. */
function explainNaoAplicadas({ count, listed }) {
  $('nao-aplicadas').hidden = count === 0;
  $('explica-nao-aplicadas').textContent =
    count === 0
      ? ''
      : `${plural(count, 'correção não aplicada', 'correções não aplicadas')}: o valor da Receita Federal não cabe no layout do ` +
        `INEP, e o arquivo corrigido mantém o valor do .txt${count > listed.length ? ` (as ${listed.length} primeiras abaixo)` : ''}. ` +
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
  const parado = shown.pessoas - linhas;
  $('contagens-corrigido').textContent =
    `Arquivo corrigido: ${plural(linhas, 'linha alterada', 'linhas alteradas')} de ${plural(shown.pessoas, 'pessoa', 'pessoas')} da tabela. ` +
    `Correções não aplicadas: ${naoAplicadas}` +
    (naoAplicadas
      ? ' (a linha mantém o valor do .txt: o layout do INEP não aceita o valor da Receita, marcado na tabela com ' +
        `“${NAO_APLICADA.trim()}”, ou o INEP recusaria a troca por arquivo; a aba “Divergências” diz, na coluna “Como corrigir”, ` +
        'quem corrige e onde)'
      : '') +
    '.' +
    (parado > 0
      ? ` ${plural(parado, 'pessoa não teve', 'pessoas não tiveram')} a linha alterada: só divergências que não são corrigidas automaticamente ` +
        '(filiação, Sexo, Cor/Raça) ou que não puderam ser aplicadas. Corrija-as no Educacenso.'
      : '');
}

// Consultas -------------------------------------------------------------------------------------

let queries = [];
let queriesLoading = null;

const labelOf = (item) => item.titulo ?? item.name;

function queryParams() {
  const params = new URLSearchParams({ query: $('consulta').value });
  for (const input of $('filtros').querySelectorAll('input')) if (input.value !== '') params.set(input.name, input.value);
  return params;
}

function buildFilters() {
  const query = queries.find((q) => q.name === $('consulta').value);
  $('consulta-descricao').textContent = query?.descricao ?? query?.description ?? '';
  const fieldset = $('filtros');
  fieldset.replaceChildren(el('legend', { text: 'Filtros (todos opcionais, salvo os marcados)' }));
  for (const filter of query?.filters ?? []) {
    const id = `filtro-${filter.name}`;
    const input = el('input', { id, name: filter.name });
    input.required = filter.required === true;
    input.type = filter.type === 'date' ? 'date' : filter.type === 'integer' ? 'number' : 'text';
    if (filter.type === 'integer') input.step = '1';
    const help = filter.descricao ?? '';
    const label = el('label', { for: id, text: `${labelOf(filter)}${filter.required ? ' (obrigatório)' : ''}` });
    fieldset.append(label, input);
    if (help) {
      input.setAttribute('aria-describedby', `${id}-ajuda`);
      fieldset.append(el('p', { class: 'dica', id: `${id}-ajuda`, text: help }));
    }
  }
}

/** The list of queries, asked for when the tab is first opened (never on load: SPEC §3.3's 503 without a database). */
function loadQueries() {
  if (queries.length > 0 || queriesLoading !== null) return queriesLoading;
  queriesLoading = guarded(boxes.consultas, async () => {
    const listing = await getJson('/api/query');
    queries = listing.queries;
    $('consulta').replaceChildren(...queries.map((q) => el('option', { value: q.name, text: labelOf(q) })));
    buildFilters();
  }).finally(() => (queriesLoading = null));
  return queriesLoading;
}

/**
 * The query's rows as one table source: screen pages of 100 over the service's pages of 1000,
 * fetched as the pager reaches them (next_cursor) and kept, so paging back needs no request.
 */
function queryPager(params, firstAnswer) {
  const rows = [...firstAnswer.rows];
  let cursor = firstAnswer.next_cursor;
  const columns = firstAnswer.columns.map((name) => ({ key: name, label: name }));
  return {
    columns,
    source: {
      done: Promise.resolve({ counts: [] }),
      async page({ page }) {
        while (cursor !== null && (page + 1) * 100 > rows.length) {
          const request = new URLSearchParams(params);
          request.set('cursor', cursor);
          const next = await getJson(`/api/query?${request}`);
          rows.push(...next.rows);
          cursor = next.next_cursor;
        }
        const pages = Math.max(1, Math.ceil(rows.length / 100));
        const at = Math.min(Math.max(0, page), pages - 1);
        const cells = rows
          .slice(at * 100, at * 100 + 100)
          .map((row) => columns.map((c) => (row[c.key] === null ? '' : String(row[c.key]))));
        return { cells, matched: rows.length, total: rows.length, page: at, pages, more: cursor !== null };
      },
    },
  };
}

async function consultar(params) {
  const answer = await getJson(`/api/query?${params}`);
  const query = queries.find((q) => q.name === params.get('query'));
  const { columns, source } = queryPager(params, answer);
  renderTable($('tabela-consulta'), { caption: `Consulta: ${query ? labelOf(query) : answer.query}`, columns, source, sortable: false });
  $('resultado-consulta').hidden = false;
  boxes.consultas.status(
    `${plural(answer.count, 'linha', 'linhas')} na primeira página${answer.next_cursor ? '; há mais: use “Página seguinte”' : ''}.`,
  );
  return params;
}

async function exportCsv() {
  const params = queryParams();
  params.set('format', 'csv');
  boxes.consultas.status('Exportando…');
  const { blob } = await getBlob(`/api/query?${params}`);
  save(blob, `${params.get('query')}.csv`);
  boxes.consultas.status('CSV exportado.');
}

// Wiring ------------------------------------------------------------------------------------

let lotes = null;

/** The tabs a person can choose now (Consultas only where the service has queries). */
const visibleTabs = () => [...document.querySelectorAll('[role="tab"]')].filter((tab) => !tab.hidden);

/** Shows `tab`'s panel; `load`: ask for what the tab lists (off when the caller asks for something more precise). */
function selectTab(tab, { load = true } = {}) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const selected = other === tab;
    other.setAttribute('aria-selected', String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute('aria-controls')).hidden = !selected;
  }
  tab.focus();
  adoptTypedKey();
  if (!load || (!key.get() && !signedIn())) return; // nothing to ask for yet: the tab asks once there is a key
  if (tab.id === 'aba-consultas') void loadQueries();
  if (tab.id === 'aba-lotes') void lotes.opened();
}

/**
 * What this service offers the page (pagina.json): the Consultas tab only where queries are
 * configured, so the page never asks for a list that can only answer 503.
 */
async function offered() {
  try {
    const response = await fetch('/pagina.json', { cache: 'no-store' });
    if (!response.ok) return;
    const { consultas } = await response.json();
    $('aba-consultas').hidden = consultas !== true;
  } catch {
    // no answer: the tab stays hidden, and every other task still works
  }
}

/** Files dropped on a box become its input's choice (the first one when it takes one). */
function dropZone(box, input) {
  box.addEventListener('dragover', (e) => {
    e.preventDefault();
    box.classList.add('arrastando');
  });
  box.addEventListener('dragleave', () => box.classList.remove('arrastando'));
  box.addEventListener('drop', (e) => {
    e.preventDefault();
    box.classList.remove('arrastando');
    const files = [...(e.dataTransfer?.files ?? [])];
    if (input.disabled || files.length === 0) return;
    const chosen = new DataTransfer();
    for (const file of input.multiple ? files : files.slice(0, 1)) chosen.items.add(file);
    input.files = chosen.files;
    // Setting files from script fires no event: announce it as a choice, which clears the result.
    input.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

function init() {
  initAccessBar({ say: (text) => header.status(text) });
  void offered();
  if (key.get()) keyEntered();
  $('chave-form').addEventListener('submit', (e) => {
    e.preventDefault();
    // Every message so far was about the key the person is now replacing, or is about to be stale.
    header.clear();
    for (const box of Object.values(boxes)) box.clear();
    if ($('chave').disabled) return;
    if (!key.set($('chave').value)) {
      header.tell('Informe a chave de acesso.');
      $('chave').focus();
      return;
    }
    keyEntered({ moveFocus: true });
    header.status('Chave registrada nesta aba.');
    const open = visibleTabs().find((tab) => tab.getAttribute('aria-selected') === 'true');
    if (open?.id === 'aba-lotes') void lotes.opened();
    if (open?.id === 'aba-consultas') void loadQueries();
  });
  $('sair').addEventListener('click', askKey);

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener('click', () => selectTab(tab));
    tab.addEventListener('keydown', (e) => {
      const shown = visibleTabs();
      const i = shown.indexOf(tab);
      if (e.key === 'ArrowRight') selectTab(shown[(i + 1) % shown.length]);
      if (e.key === 'ArrowLeft') selectTab(shown[(i - 1 + shown.length) % shown.length]);
      if (e.key === 'Home') selectTab(shown[0]);
      if (e.key === 'End') selectTab(shown[shown.length - 1]);
    });
  }
  for (const box of document.querySelectorAll('.caixa-arquivo')) dropZone(box, box.querySelector('input[type="file"]'));

  // The downloads wait while a task runs; the pager keeps its own state (its first page's
  // "Página anterior" stays disabled, whatever ran meanwhile).
  const panelButtons = (panel) => () => [...$(panel).querySelectorAll('.acoes button')];

  lotes = initLotes({ box: boxes.lotes, guarded, download: downloadFrom });

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
  $('retorno-divergencias').addEventListener('change', () => schoolFields([...$('retorno-divergencias').files]));
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
          downloadFrom(boxes.divergencias, `/api/lotes/${shown.lote}/divergencias?format=${format}`, `divergencias.${format}`),
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

  const consulta = task({
    form: $('form-consulta'),
    box: boxes.consultas,
    results: [$('resultado-consulta')],
    buttons: () => [],
    clear: () => $('tabela-consulta').replaceChildren(),
  });
  $('consulta').addEventListener('change', buildFilters);
  $('form-consulta').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(boxes.consultas, () => consulta.run(() => consultar(queryParams())));
  });
  $('exportar-csv').addEventListener('click', () => guarded(boxes.consultas, () => consulta.request(exportCsv)));
  // A page the pager could not fetch (a lost session, the database gone): said, and the result cleared.
  const tables = { 'tabela-consulta': boxes.consultas, 'tabela-divergencias': boxes.divergencias, 'tabela-pessoas': boxes.retorno };
  for (const [panel, box] of Object.entries(tables)) {
    $(panel).addEventListener('falha', (e) => {
      const err = e.detail instanceof Error ? e.detail : apiErrorOf(e.detail);
      $(panel).replaceChildren();
      $(panel).parentElement.hidden = true;
      showError(err, box);
    });
  }
}

init();
