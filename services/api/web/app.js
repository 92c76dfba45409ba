// The staff page (SPEC §3.6): the key once per tab, the three tasks, every error with the
// service's own `erro`. Downloads use the routes' own formats, never a copy made here.
import { ApiError, filenameOf, getBlob, getJson, key, postForm, save } from './api.js';
import { renderTable } from './table.js';
import { signedIn } from './session.js';

const $ = (id) => document.getElementById(id);
const DIVERGENCIA_COLUMNS = ['codigo_na_escola', 'linha', 'campo', 'enviado', 'correto', 'is_filiacao', 'chave'];
const PESSOA_COLUMNS = ['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'];

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
  let text = err instanceof ApiError ? err.message : `Erro inesperado: ${err.message ?? err}`;
  if (err instanceof ApiError && (err.status === 503 || err.status === 504)) text += ' Tente novamente mais tarde.';
  tell(text);
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
  $('entrar').disabled = false;
  $('sair').hidden = true;
  $('chave').focus();
}

function keyEntered() {
  $('chave').value = '';
  $('chave').disabled = true;
  $('entrar').disabled = true;
  $('sair').hidden = false;
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
    tell('Informe a chave de acesso.');
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

/**
 * One task of the page and the result it shows (SPEC §3.6: nothing on screen belongs to inputs
 * other than those chosen). `shown` is what produced the result on screen (the form data of the
 * files, or the query's parameters): the only thing a download or a next page may send, so a
 * download never re-sends files the inputs no longer hold. Editing the form, a new run or an
 * error clears the result. While a request runs, the form and `buttons` are disabled, so a second
 * click cannot start a second upload, and the inputs cannot change under the result on its way.
 */
function task({ form, result, buttons, clear, capture }) {
  let shown = null;
  let running = false;

  function reset() {
    shown = null;
    result.hidden = true;
    clear();
  }

  async function request(action) {
    if (running) return;
    running = true;
    const controls = [...form.elements, ...buttons];
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
    /** Clears the result, sends what the inputs hold now with `fetchResult`, shows its answer. */
    run: (fetchResult, show) => {
      // Captured before the form is disabled: a disabled input is left out of its FormData.
      const sent = capture();
      return request(async () => {
        reset();
        show(await fetchResult(sent));
        shown = sent;
        result.hidden = false;
      });
    },
    /** Runs `action` with what produced the result on screen; nothing when there is none. */
    withShown: (action) => (shown === null ? Promise.resolve() : request(() => action(shown))),
    /** A request that does not depend on the result on screen (an export of the inputs). */
    request,
  };
}

async function download(route, form, format, fallback) {
  const { body, header } = await postForm(`${route}?format=${format}`, form, { as: 'blob' });
  save(body, filenameOf(header('content-disposition'), fallback));
  status(`Arquivo ${fallback} baixado.`);
}

/** Posts `form` (files) with a progress bar; answers with the service's body. */
async function upload(form, progressId, route) {
  const progress = progressOf(progressId);
  try {
    const { body } = await postForm(route, form, { onProgress: progress.update });
    return body;
  } finally {
    progress.done();
  }
}

function showDivergencias(body) {
  const rows = body.divergencias.map((d) => ({ ...d, is_filiacao: String(d.is_filiacao) }));
  renderTable($('tabela-divergencias'), {
    caption: 'Divergências com a Receita Federal',
    columns: DIVERGENCIA_COLUMNS,
    rows,
    textColumns: ['codigo_na_escola', 'campo'],
    groupColumn: 'chave',
  });
  status(`${rows.length} divergências encontradas.`);
}

function showPessoas(body) {
  renderTable($('tabela-pessoas'), {
    caption: 'Pessoas corrigidas',
    columns: PESSOA_COLUMNS,
    rows: body.pessoas,
    textColumns: ['codigo_na_escola', 'nome', 'cpf'],
  });
  status(`${body.pessoas.length} pessoas com divergência.`);
}

async function downloadCorrigido(form) {
  const { body, header } = await postForm('/api/censo-corrigido', form, { as: 'blob' });
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

/** One service page of the query `params` (the filters as they were when it first ran). */
async function queryPage(params, cursor) {
  const request = new URLSearchParams(params);
  if (cursor) request.set('cursor', cursor);
  return getJson(`/api/query?${request}`);
}

function showQueryPage(page) {
  nextCursor = page.next_cursor;
  renderTable($('tabela-consulta'), { caption: `Consulta ${page.query}`, columns: page.columns, rows: page.rows });
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
  adoptTypedKey();
  if (tab.id === 'aba-consultas' && queries.length === 0 && (key.get() || signedIn())) void guarded(loadQueries);
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
    if (input.disabled || !e.dataTransfer?.files.length) return;
    input.files = e.dataTransfer.files;
    // Setting files from script fires no event: announce it as a choice, which clears the result.
    input.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

/** A task's `clear`: empties the containers of its result (table, counts). */
function emptier(...ids) {
  return () => {
    for (const id of ids) $(id).replaceChildren();
  };
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
    keyEntered();
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

  const divergencias = task({
    form: $('form-divergencias'),
    result: $('resultado-divergencias'),
    buttons: $('resultado-divergencias').querySelectorAll('.acoes button'),
    clear: emptier('tabela-divergencias'),
    capture: () => new FormData($('form-divergencias')),
  });
  dropZone($('form-divergencias'), $('retorno-divergencias'));
  $('form-divergencias').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() => divergencias.run((form) => upload(form, 'progresso-divergencias', '/api/divergencias-rf'), showDivergencias));
  });
  for (const button of $('resultado-divergencias').querySelectorAll('[data-baixar]')) {
    const format = button.dataset.baixar;
    button.addEventListener('click', () =>
      guarded(() => divergencias.withShown((form) => download('/api/divergencias-rf', form, format, `divergencias.${format}`))),
    );
  }

  const pessoas = task({
    form: $('form-retorno'),
    result: $('resultado-retorno'),
    buttons: $('resultado-retorno').querySelectorAll('.acoes button'),
    clear: emptier('tabela-pessoas', 'contagens-corrigido'),
    capture: () => new FormData($('form-retorno')),
  });
  $('form-retorno').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() => pessoas.run((form) => upload(form, 'progresso-retorno', '/api/retorno-rf'), showPessoas));
  });
  for (const button of $('resultado-retorno').querySelectorAll('[data-baixar]')) {
    const format = button.dataset.baixar;
    button.addEventListener('click', () =>
      guarded(() => pessoas.withShown((form) => download('/api/retorno-rf', form, format, `pessoas.${format}`))),
    );
  }
  $('baixar-corrigido').addEventListener('click', () => guarded(() => pessoas.withShown(downloadCorrigido)));

  const consulta = task({
    form: $('form-consulta'),
    result: $('resultado-consulta'),
    buttons: [$('proxima-pagina')],
    clear: () => {
      $('tabela-consulta').replaceChildren();
      nextCursor = null;
      $('proxima-pagina').hidden = true;
    },
    capture: queryParams,
  });
  $('consulta').addEventListener('change', buildFilters);
  $('form-consulta').addEventListener('submit', (e) => {
    e.preventDefault();
    void guarded(() => consulta.run((params) => queryPage(params, null), showQueryPage));
  });
  $('proxima-pagina').addEventListener('click', () =>
    guarded(() => consulta.withShown(async (params) => showQueryPage(await queryPage(params, nextCursor)))),
  );
  $('exportar-csv').addEventListener('click', () => guarded(() => consulta.request(exportCsv)));
}

init();
