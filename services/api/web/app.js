// The staff page (SPEC §3.6): the key once per tab (or the signed-in session, §8), the three
// tasks, every error with the service's own `erro`. Each set of files is uploaded once, as an
// asynchronous task (§7.1); the table, the counts and every download come from that task, so
// nothing on screen can belong to files other than the ones chosen. Several returns go as one
// batch (§7.3).
import { ApiError, apiErrorOf, filenameOf, follow, getBlob, getHeaders, getJson, key, postForm, postJson, save, startTask } from './api.js';
import { el, renderTable, tableWorker } from './table.js';
import { ready as sessionReady, signedIn } from './session.js';

const $ = (id) => document.getElementById(id);

const NAO_CORRIGIDO = 'não corrigido automaticamente';
/** The words for a divergence's `chave` (SPEC §2). */
const DADO = {
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
  nome_mae: 'Nome da mãe',
  nome_pai: 'Nome do pai',
  null: 'Outro campo',
};
/** Which divergences the corrected file applies (SPEC §3.4: fields 4–7 only). */
const APLICADA = {
  cpf: 'Sim',
  nome: 'Sim',
  data_nascimento: 'Sim',
  inep: 'Sim',
  nome_mae: NAO_CORRIGIDO,
  nome_pai: NAO_CORRIGIDO,
  null: NAO_CORRIGIDO,
};
const DIVERGENCIA_COLUMNS = [
  { key: 'codigo_na_escola', label: 'Código na escola' },
  { key: 'linha', label: 'Linha no txt' },
  { key: 'campo', label: 'Campo no retorno' },
  { key: 'enviado', label: 'Valor enviado' },
  { key: 'correto', label: 'Valor da Receita Federal' },
  { key: 'chave', label: 'Dado', values: DADO },
  { key: 'is_filiacao', label: 'Filiação', values: { true: 'Sim', false: 'Não' } },
  { key: 'corrigido', from: 'chave', label: 'No arquivo corrigido', values: APLICADA },
];
const PESSOA_COLUMNS = [
  { key: 'codigo_na_escola', label: 'Código na escola' },
  { key: 'linha', label: 'Linha no txt' },
  { key: 'cpf', label: 'CPF' },
  { key: 'nome', label: 'Nome' },
  { key: 'data_nascimento', label: 'Data de nascimento' },
  { key: 'inep', label: 'INEP' },
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

function status(text) {
  $('status').textContent = text;
}

/** Shows `text` in the alert box: the service's `erro`, or what the person should do next. */
function tell(text) {
  const box = $('erro');
  box.textContent = text;
  box.hidden = false;
  status('');
}

function showError(err) {
  let text;
  if (err instanceof ApiError) {
    text = err.message;
    if (err.status === 503 || err.status === 504) text += ' Tente novamente mais tarde.';
  } else {
    text = `Algo deu errado na página: ${err?.message ?? err}. Recarregue a página e tente de novo.`;
  }
  tell(text);
  if (err instanceof ApiError && err.status === 401 && !signedIn()) askKey();
}

function clearError() {
  $('erro').hidden = true;
  $('erro').textContent = '';
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
  void loadQueries();
}

/** A key typed and not entered is the key used (SPEC §3.6): it becomes the tab's key. */
function adoptTypedKey() {
  if (!$('chave').disabled && key.set($('chave').value)) keyEntered();
}

/** Runs an action with errors shown and the status line kept honest. */
async function guarded(action) {
  clearError();
  adoptTypedKey();
  if (!key.get() && !signedIn()) {
    tell('Informe a chave de acesso no alto da página e tente de novo.');
    askKey();
    return;
  }
  try {
    await action();
  } catch (err) {
    showError(err);
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
function task({ form, results, buttons, clear }) {
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
    clearError();
    status('');
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

async function downloadFrom(path, fallback) {
  const { blob, headers } = await getBlob(path);
  const name = filenameOf(headers.get('content-disposition'), fallback);
  save(blob, name);
  status(`Arquivo ${name} baixado.`);
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
async function showResult(tarefa, worker, { container, caption, columns, textColumns, groupColumn }) {
  let source;
  try {
    source = await worker.source(`/api/tarefas/${tarefa.id}/resultado`, getHeaders(), columns, { textColumns, groupColumn });
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

function explainDivergencias(counts) {
  const total = counts.reduce((sum, [, n]) => sum + n, 0);
  const applied = counts
    .filter(([word]) => ['CPF', 'Nome', 'Data de nascimento', 'INEP'].includes(word))
    .reduce((sum, [, n]) => sum + n, 0);
  $('explica-divergencias').textContent =
    total === 0
      ? 'Nenhuma divergência com a Receita Federal neste retorno: não há nada a corrigir.'
      : `${plural(total, 'divergência', 'divergências')}, uma por linha da tabela. ` +
        `${plural(applied, 'é corrigida', 'são corrigidas')} automaticamente no arquivo corrigido (CPF, Nome, Data de nascimento e INEP; ` +
        'aba “Retorno + txt”). ' +
        `${plural(total - applied, 'não é', 'não são')}: Nome da mãe, Nome do pai (filiação) e outros campos, como Sexo e Cor/Raça, ` +
        'precisam ser corrigidos por você no Educacenso. Baixe a planilha para trabalhar nela.';
}

async function verDivergencias(form, progress) {
  const shown = await runAndShow('/api/divergencias-rf', form, progress, {
    container: $('tabela-divergencias'),
    caption: 'Divergências com a Receita Federal',
    columns: DIVERGENCIA_COLUMNS,
    textColumns: ['codigo_na_escola', 'campo', 'enviado', 'correto'],
    groupColumn: 'chave',
  });
  divergenciasSource = shown.source;
  explainDivergencias(shown.counts);
  const total = shown.total;
  status(`${plural(total, 'divergência encontrada', 'divergências encontradas')}.`);
  return { tarefa: shown.tarefa };
}

// A batch: several returns at once (SPEC §7.3) ---------------------------------------------------

function showLote(tarefas, files) {
  const byName = new Map(tarefas.map((t) => [t.referencia, t]));
  $('lote-arquivos').replaceChildren(
    ...files.map((file, i) => {
      const tarefa = byName.get(String(i + 1));
      let state = tarefa ? (ESTADO[tarefa.estado] ?? tarefa.estado) : 'Enviando';
      if (tarefa?.estado === 'falhou') state += `: ${tarefa.erro.erro}`;
      return el('li', {}, el('strong', { text: file.name }), ` — ${state}`);
    }),
  );
}

async function verLote(form, progress) {
  const files = form.getAll('retorno');
  for (const file of files) {
    if (file.size > LIMITE) throw tooBig(file);
  }
  const total = files.reduce((sum, f) => sum + f.size, 0);
  const lote = await postJson('/api/lotes', { nome: `Página: ${files.length} retornos` });
  $('resultado-lote').hidden = false;
  $('explica-lote').textContent = `Lote de ${plural(files.length, 'arquivo', 'arquivos')}: o estado de cada um aparece abaixo.`;
  showLote([], files);
  let before = 0;
  for (const [i, file] of files.entries()) {
    const one = new FormData();
    // The file's position names it in the batch: two schools' files often share a name.
    one.set('referencia', String(i + 1));
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
      showLote(tarefas, files);
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
    '. A planilha combinada traz as divergências de todos, com o arquivo de origem em cada linha.';
  status(`Lote concluído: ${files.length} arquivos.`);
  return { lote: lote.id };
}

// Retorno + txt ---------------------------------------------------------------------------------

function explainPessoas(total) {
  $('explica-pessoas').textContent =
    total === 0
      ? 'Nenhuma pessoa do .txt tem divergência com a Receita Federal: o arquivo corrigido seria igual ao enviado.'
      : `${plural(total, 'pessoa do .txt tem', 'pessoas do .txt têm')} divergência com a Receita Federal, uma por linha, já com os valores ` +
        'da Receita para CPF, Nome, Data de nascimento e INEP. Nome da mãe é o do .txt: filiação, Sexo e Cor/Raça não são ' +
        'corrigidos automaticamente (corrija-os no Educacenso). Próximo passo: baixe o arquivo corrigido e importe-o no Educacenso.';
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
  status(`${plural(shown.total, 'pessoa com divergência', 'pessoas com divergência')}.`);
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
  const headers = await downloadFrom(`/api/tarefas/${shown.corrigido.id}/resultado`, 'censo-corrigido.txt');
  const linhas = Number(headers.get('censo-pessoas-corrigidas'));
  const naoAplicadas = Number(headers.get('censo-correcoes-nao-aplicadas'));
  const parado = shown.pessoas - linhas;
  $('contagens-corrigido').textContent =
    `Arquivo corrigido: ${plural(linhas, 'linha alterada', 'linhas alteradas')} de ${plural(shown.pessoas, 'pessoa', 'pessoas')} da tabela. ` +
    `Correções não aplicadas: ${naoAplicadas}` +
    (naoAplicadas ? ' (valor da Receita que o layout do INEP não aceita: a linha mantém o valor do .txt)' : '') +
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

/** The list of queries, once a key or a session is there to ask for it. */
function loadQueries() {
  if (queries.length > 0 || queriesLoading !== null) return queriesLoading;
  if (!key.get() && !signedIn()) return null;
  queriesLoading = getJson('/api/query')
    .then((listing) => {
      queries = listing.queries;
      $('consulta').replaceChildren(...queries.map((q) => el('option', { value: q.name, text: labelOf(q) })));
      buildFilters();
    })
    .catch((err) => {
      // Reported when the person opens the tab; a new key or session tries again.
      if (!$('painel-consultas').hidden) showError(err);
    })
    .finally(() => (queriesLoading = null));
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
  status(`${plural(answer.count, 'linha', 'linhas')} na primeira página${answer.next_cursor ? '; há mais: use “Página seguinte”' : ''}.`);
  return params;
}

async function exportCsv() {
  const params = queryParams();
  params.set('format', 'csv');
  status('Exportando…');
  const { blob } = await getBlob(`/api/query?${params}`);
  save(blob, `${params.get('query')}.csv`);
  status('CSV exportado.');
}

// Wiring ------------------------------------------------------------------------------------

function selectTab(tab) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const selected = other === tab;
    other.setAttribute('aria-selected', String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute('aria-controls')).hidden = !selected;
  }
  tab.focus();
  adoptTypedKey();
  if (tab.id === 'aba-consultas') void loadQueries();
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
  if (key.get()) keyEntered();
  $('chave-form').addEventListener('submit', (e) => {
    e.preventDefault();
    clearError();
    if ($('chave').disabled) return;
    if (!key.set($('chave').value)) {
      tell('Informe a chave de acesso.');
      $('chave').focus();
      return;
    }
    keyEntered({ moveFocus: true });
    status('Chave registrada nesta aba.');
  });
  $('sair').addEventListener('click', askKey);
  void sessionReady.then(() => signedIn() && loadQueries());

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener('click', () => selectTab(tab));
    tab.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(tab);
      if (e.key === 'ArrowRight') selectTab(tabs[(i + 1) % tabs.length]);
      if (e.key === 'ArrowLeft') selectTab(tabs[(i - 1 + tabs.length) % tabs.length]);
      if (e.key === 'Home') selectTab(tabs[0]);
      if (e.key === 'End') selectTab(tabs[tabs.length - 1]);
    });
  }
  for (const box of document.querySelectorAll('.caixa-arquivo')) dropZone(box, box.querySelector('input[type="file"]'));

  // The downloads wait while a task runs; the pager keeps its own state (its first page's
  // "Página anterior" stays disabled, whatever ran meanwhile).
  const panelButtons = (panel) => () => [...$(panel).querySelectorAll('.acoes button')];

  const divergencias = task({
    form: $('form-divergencias'),
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
  $('form-divergencias').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() =>
      divergencias.run(async (form) => {
        const progress = progressIn($('form-divergencias').querySelector('.progresso'));
        try {
          return form.getAll('retorno').length > 1 ? await verLote(form, progress) : await verDivergencias(form, progress);
        } finally {
          progress.done();
        }
      }),
    );
  });
  for (const button of $('resultado-divergencias').querySelectorAll('[data-baixar]')) {
    const format = button.dataset.baixar;
    button.addEventListener('click', () =>
      guarded(() =>
        divergencias.withShown((shown) =>
          downloadFrom(`/api/tarefas/${shown.tarefa.id}/resultado?format=${format}`, `divergencias.${format}`),
        ),
      ),
    );
  }
  for (const button of $('resultado-lote').querySelectorAll('[data-baixar-lote]')) {
    const format = button.dataset.baixarLote;
    button.addEventListener('click', () =>
      guarded(() =>
        divergencias.withShown((shown) => downloadFrom(`/api/lotes/${shown.lote}/divergencias?format=${format}`, `divergencias.${format}`)),
      ),
    );
  }

  const pessoas = task({
    form: $('form-retorno'),
    results: [$('resultado-retorno')],
    buttons: panelButtons('painel-retorno'),
    clear: () => {
      pessoasSource?.close();
      pessoasSource = null;
      $('tabela-pessoas').replaceChildren();
      $('contagens-corrigido').textContent = '';
      $('explica-pessoas').textContent = '';
    },
  });
  $('form-retorno').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() =>
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
      guarded(() =>
        pessoas.withShown((shown) => downloadFrom(`/api/tarefas/${shown.tarefa.id}/resultado?format=${format}`, `pessoas.${format}`)),
      ),
    );
  }
  $('baixar-corrigido').addEventListener('click', () => guarded(() => pessoas.withShown(baixarCorrigido)));

  const consulta = task({
    form: $('form-consulta'),
    results: [$('resultado-consulta')],
    buttons: () => [],
    clear: () => $('tabela-consulta').replaceChildren(),
  });
  $('consulta').addEventListener('change', buildFilters);
  $('form-consulta').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() => consulta.run(() => consultar(queryParams())));
  });
  $('exportar-csv').addEventListener('click', () => guarded(() => consulta.request(exportCsv)));
  // A page the pager could not fetch (a lost session, the database gone): said, and the result cleared.
  for (const panel of ['tabela-consulta', 'tabela-divergencias', 'tabela-pessoas']) {
    $(panel).addEventListener('falha', (e) => {
      const err = e.detail instanceof Error ? e.detail : apiErrorOf(e.detail);
      $(panel).replaceChildren();
      $(panel).parentElement.hidden = true;
      showError(err);
    });
  }
}

init();
