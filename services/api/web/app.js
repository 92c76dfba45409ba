// The staff page (SPEC §3.6): the key once per tab, the three tasks, every error with the
// service's own `erro`. Downloads use the routes' own formats, never a copy made here.
import { ApiError, filenameOf, getBlob, getJson, key, postForm, save } from './api.js';
import { renderTable } from './table.js';

const $ = (id) => document.getElementById(id);
const DIVERGENCIA_COLUMNS = ['codigo_na_escola', 'linha', 'campo', 'enviado', 'correto', 'is_filiacao', 'chave'];
const PESSOA_COLUMNS = ['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'];

function status(text) {
  $('status').textContent = text;
}

function showError(err) {
  const box = $('erro');
  let text = err instanceof ApiError ? err.message : `Erro inesperado: ${err.message ?? err}`;
  if (err instanceof ApiError && (err.status === 503 || err.status === 504)) text += ' Tente novamente mais tarde.';
  box.textContent = text;
  box.hidden = false;
  status('');
  if (err instanceof ApiError && err.status === 401) askKey();
}

function clearError() {
  $('erro').hidden = true;
  $('erro').textContent = '';
}

function askKey() {
  key.clear();
  $('chave').value = '';
  $('chave').disabled = false;
  $('sair').hidden = true;
  $('chave').focus();
}

function keyEntered() {
  $('chave').value = '';
  $('chave').disabled = true;
  $('sair').hidden = false;
}

/** Runs an action with errors shown and the status line kept honest. */
async function guarded(action) {
  clearError();
  if (!key.get()) {
    showError(new Error('informe a chave de acesso primeiro.'));
    askKey();
    return;
  }
  try {
    await action();
  } catch (err) {
    showError(err);
  }
}

function progressOf(id) {
  const bar = $(id);
  bar.value = 0;
  bar.hidden = false;
  return {
    update: (fraction) => {
      bar.value = Math.round(fraction * 100);
      status(`Enviando: ${bar.value}%`);
      if (fraction >= 1) status('Processando o arquivo…');
    },
    done: () => (bar.hidden = true),
  };
}

/** The files of a form, re-sent for each download so the routes answer in their own formats. */
let divergenciasForm = null;
let pessoasForm = null;

async function download(route, form, format, fallback) {
  const { body, header } = await postForm(`${route}?format=${format}`, form, { as: 'blob' });
  save(body, filenameOf(header('content-disposition'), fallback));
  status(`Arquivo ${fallback} baixado.`);
}

/** Posts a task's form with a progress bar, keeps the form for the downloads, shows the answer. */
async function runTask(formId, progressId, route, show) {
  const form = new FormData($(formId));
  const progress = progressOf(progressId);
  try {
    const { body } = await postForm(route, form, { onProgress: progress.update });
    show(body);
    return form;
  } finally {
    progress.done();
  }
}

async function showDivergencias() {
  divergenciasForm = await runTask('form-divergencias', 'progresso-divergencias', '/api/divergencias-rf', (body) => {
    const rows = body.divergencias.map((d) => ({ ...d, is_filiacao: String(d.is_filiacao) }));
    renderTable($('tabela-divergencias'), {
      caption: 'Divergências com a Receita Federal',
      columns: DIVERGENCIA_COLUMNS,
      rows,
      textColumns: ['codigo_na_escola', 'campo'],
      groupColumn: 'chave',
    });
    $('resultado-divergencias').hidden = false;
    status(`${rows.length} divergências encontradas.`);
  });
}

async function showPessoas() {
  pessoasForm = await runTask('form-retorno', 'progresso-retorno', '/api/retorno-rf', (body) => {
    renderTable($('tabela-pessoas'), {
      caption: 'Pessoas corrigidas',
      columns: PESSOA_COLUMNS,
      rows: body.pessoas,
      textColumns: ['codigo_na_escola', 'nome', 'cpf'],
    });
    $('contagens-corrigido').textContent = '';
    $('resultado-retorno').hidden = false;
    status(`${body.pessoas.length} pessoas com divergência.`);
  });
}

async function downloadCorrigido() {
  const { body, header } = await postForm('/api/censo-corrigido', pessoasForm, { as: 'blob' });
  const name = filenameOf(header('content-disposition'), 'censo-corrigido.txt');
  save(body, name);
  $('contagens-corrigido').textContent =
    `Pessoas corrigidas: ${header('censo-pessoas-corrigidas')}. Correções não aplicadas: ${header('censo-correcoes-nao-aplicadas')}.`;
  status(`Arquivo ${name} baixado.`);
}

// Consultas ---------------------------------------------------------------------------------

let queries = [];
let nextCursor = null;

function queryParams() {
  const params = new URLSearchParams({ query: $('consulta').value });
  for (const input of $('filtros').querySelectorAll('input')) if (input.value !== '') params.set(input.name, input.value);
  return params;
}

function buildFilters() {
  const query = queries.find((q) => q.name === $('consulta').value);
  const fieldset = $('filtros');
  fieldset.replaceChildren(Object.assign(document.createElement('legend'), { textContent: 'Filtros' }));
  for (const filter of query?.filters ?? []) {
    const id = `filtro-${filter.name}`;
    const label = Object.assign(document.createElement('label'), {
      htmlFor: id,
      textContent: filter.description ? `${filter.name} — ${filter.description}` : filter.name,
    });
    const input = Object.assign(document.createElement('input'), { id, name: filter.name, required: filter.required });
    input.type = filter.type === 'date' ? 'date' : filter.type === 'integer' ? 'number' : 'text';
    if (filter.type === 'integer') input.step = '1';
    fieldset.append(label, input);
  }
}

async function loadQueries() {
  const listing = await getJson('/api/query');
  queries = listing.queries;
  $('consulta').replaceChildren(
    ...queries.map((q) =>
      Object.assign(document.createElement('option'), {
        value: q.name,
        textContent: q.description ? `${q.name} — ${q.description}` : q.name,
      }),
    ),
  );
  buildFilters();
}

async function runQuery(cursor) {
  const params = queryParams();
  if (cursor) params.set('cursor', cursor);
  const page = await getJson(`/api/query?${params}`);
  nextCursor = page.next_cursor;
  renderTable($('tabela-consulta'), { caption: `Consulta ${page.query}`, columns: page.columns, rows: page.rows });
  $('resultado-consulta').hidden = false;
  $('proxima-pagina').hidden = nextCursor === null;
  status(`${page.count} linhas nesta página${nextCursor ? '; há mais' : ''}.`);
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
  if (tab.id === 'aba-consultas' && queries.length === 0 && key.get()) void guarded(loadQueries);
}

function dropZone(form, input) {
  form.addEventListener('dragover', (e) => {
    e.preventDefault();
    form.classList.add('arrastando');
  });
  form.addEventListener('dragleave', () => form.classList.remove('arrastando'));
  form.addEventListener('drop', (e) => {
    e.preventDefault();
    form.classList.remove('arrastando');
    if (e.dataTransfer?.files.length) input.files = e.dataTransfer.files;
  });
}

function init() {
  if (key.get()) keyEntered();
  $('chave-form').addEventListener('submit', (e) => {
    e.preventDefault();
    key.set($('chave').value);
    keyEntered();
    clearError();
    status('Chave registrada nesta aba.');
  });
  $('sair').addEventListener('click', askKey);

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener('click', () => selectTab(tab));
    tab.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(tab);
      if (e.key === 'ArrowRight') selectTab(tabs[(i + 1) % tabs.length]);
      if (e.key === 'ArrowLeft') selectTab(tabs[(i - 1 + tabs.length) % tabs.length]);
    });
  }

  dropZone($('form-divergencias'), $('retorno-divergencias'));
  $('form-divergencias').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(showDivergencias);
  });
  $('form-retorno').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(showPessoas);
  });
  for (const button of $('resultado-divergencias').querySelectorAll('[data-baixar]')) {
    button.addEventListener('click', () =>
      guarded(() => download('/api/divergencias-rf', divergenciasForm, button.dataset.baixar, `divergencias.${button.dataset.baixar}`)),
    );
  }
  for (const button of $('resultado-retorno').querySelectorAll('[data-baixar]')) {
    button.addEventListener('click', () =>
      guarded(() => download('/api/retorno-rf', pessoasForm, button.dataset.baixar, `pessoas.${button.dataset.baixar}`)),
    );
  }
  $('baixar-corrigido').addEventListener('click', () => guarded(downloadCorrigido));

  $('consulta').addEventListener('change', buildFilters);
  $('form-consulta').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() => runQuery(null));
  });
  $('proxima-pagina').addEventListener('click', () => guarded(() => runQuery(nextCursor)));
  $('exportar-csv').addEventListener('click', () => guarded(exportCsv));
}

init();
