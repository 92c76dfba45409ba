// A table of any size: only the screen page (100 rows) is in the DOM, and it comes from a
// source that filters and sorts where the rows are (a worker for task results, the main thread
// for small lists, the service itself for query pages). Sortable headers (aria-sort), a text
// filter, an optional filter by one column's words with counts, one pager.
import { TableData } from './table-data.js';

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

/** A source over rows held here (small lists): complete from the start. */
export function localSource(rows, columns, options) {
  const data = new TableData(rows, columns, options);
  const counts = data.counts();
  return {
    counts,
    done: Promise.resolve({ counts, total: rows.length, ...data.summary() }),
    page: async (view) => data.page(view),
    close() {},
  };
}

/**
 * A worker for a task's result, started before the result exists: its module loads while the
 * upload and the job run, not after. `source(...)` hands it its result; `close()`
 * ends it when the task fails instead.
 */
export function tableWorker() {
  const worker = new Worker(new URL('./table-worker.js', import.meta.url), { type: 'module' });
  // A worker that fails to start says so before anyone listens: kept for the source to report.
  let broken = null;
  worker.addEventListener('error', (event) => (broken ??= workerError(event)));
  return {
    source: (url, headers, columns, options) =>
      broken ? (worker.terminate(), Promise.reject(broken)) : workerSource(worker, url, headers, columns, options),
    close: () => worker.terminate(),
  };
}

const workerError = (event) => ({ status: 0, erro: `Falha ao ler o resultado: ${event.message ?? 'erro no processamento'}` });

/**
 * A source over a task's result (`url`) fetched and parsed in `worker` as it arrives. Resolves
 * with the first screen page as soon as the worker has it; `done` settles when the whole result
 * is in (`{ counts, total, tallies, naoAplicadas }`), `onProgress(loaded)` is told meanwhile. Rejects with
 * `{ status, erro }` when the fetch fails. The worker is the source's: closing it ends the worker.
 */
function workerSource(worker, url, headers, columns, options) {
  let next = 0;
  const waiting = new Map();
  let failed = null;
  let progress = () => {};
  let finish;
  let fail;
  const done = new Promise((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  done.catch(() => {}); // also reported to whoever awaits it
  const failAll = (error) => {
    failed = error;
    for (const settle of waiting.values()) settle({ error });
    waiting.clear();
    fail(error);
  };
  worker.addEventListener('message', ({ data }) => {
    if (data.type === 'progresso') return progress(data.loaded);
    if (data.type === 'fim')
      return finish({ counts: data.counts, total: data.total, tallies: data.tallies, naoAplicadas: data.naoAplicadas });
    const settle = waiting.get(data.id);
    waiting.delete(data.id);
    if (settle) settle(data);
    else if (data.error) failAll(data.error); // the stream broke after the first page
  });
  worker.addEventListener('error', (event) => failAll(workerError(event)));
  const ask = (message) =>
    new Promise((resolve, reject) => {
      if (failed) return reject(failed);
      const id = next++;
      waiting.set(id, (data) => (data.error ? reject(data.error) : resolve(data)));
      worker.postMessage({ ...message, id });
    });
  return ask({ type: 'load', url, headers, columns, options }).then(
    (loaded) => ({
      first: loaded.page,
      done,
      onProgress: (callback) => (progress = callback),
      page: async (view) => (await ask({ type: 'page', view })).page,
      close: () => worker.terminate(),
    }),
    (error) => {
      worker.terminate();
      throw error;
    },
  );
}

/**
 * Renders a table into `container`. `columns`: `{ key, label, numeric? }`; `source`: `page(view)` answers
 * `{ cells, matched, total, page, pages, more? }` (`more`: rows the source has not fetched yet),
 * `done` settles with `{ counts }` once every row is there (until then filters and orders wait),
 * `first` is the first page when the source already has it. `textColumns` get a text filter,
 * `groupColumn` counts and a select; `selectColumns` a select each, with the words the source tallied
 * (issue 56: “Como corrigir” is a choice of a few, not something to type); `sortable` makes the
 * headers buttons.
 */
export function renderTable(
  container,
  { caption, columns, source, textColumns = [], groupColumn = null, selectColumns = [], sortable = true },
) {
  const view = { text: '', group: '', filters: {}, sort: null, dir: 'ascending', page: 0 };
  let asked = 0;
  let loading = true;
  const id = container.id;
  const parts = [];
  // Usable once every row is there: a filter or an order over part of the rows would mislead.
  const waitForAll = [];

  const group = columns.find((c) => c.key === groupColumn);
  const counts = el('ul', { class: 'contagens', 'aria-label': group ? `Quantas por ${group.label.toLowerCase()}` : '' });
  if (group) parts.push(counts);
  const controls = el('div', { class: 'filtros-tabela' });
  if (textColumns.length > 0) {
    const searched = columns.filter((c) => textColumns.includes(c.key)).map((c) => c.label);
    const input = el('input', { type: 'search', id: `${id}-filtro` });
    input.addEventListener('input', () => update({ text: input.value, page: 0 }));
    controls.append(el('label', { for: `${id}-filtro`, text: `Filtrar por: ${searched.join(', ')}` }), input);
    waitForAll.push(input);
  }
  const select = el('select', { id: `${id}-grupo` }, el('option', { value: '', text: 'todas' }));
  if (group) {
    select.addEventListener('change', () => update({ group: select.value, page: 0 }));
    controls.append(el('label', { for: `${id}-grupo`, text: `Mostrar só: ${group.label}` }), select);
    waitForAll.push(select);
  }
  const choices = columns
    .filter((c) => selectColumns.includes(c.key))
    .map((column) => {
      const choice = el('select', { id: `${id}-filtro-${column.key}` }, el('option', { value: '', text: 'todas' }));
      choice.addEventListener('change', () => update({ filters: { ...view.filters, [column.key]: choice.value }, page: 0 }));
      controls.append(el('label', { for: choice.id, text: `Mostrar só: ${column.label}` }), choice);
      waitForAll.push(choice);
      return { column, choice };
    });
  if (controls.childElementCount > 0) parts.push(controls);

  const summary = el('p', { class: 'resumo', 'aria-live': 'polite' });
  const head = el('tr');
  const headers = columns.map((column) => {
    const th = el('th', column.numeric ? { scope: 'col', class: 'numero' } : { scope: 'col' });
    if (sortable) {
      th.setAttribute('aria-sort', 'none');
      const button = el('button', { type: 'button', text: column.label });
      button.addEventListener('click', () => {
        const dir = view.sort === column.key && view.dir === 'ascending' ? 'descending' : 'ascending';
        update({ sort: column.key, dir, page: 0 });
      });
      th.append(button);
      waitForAll.push(button);
    } else {
      th.textContent = column.label;
    }
    head.append(th);
    return th;
  });
  const body = el('tbody');
  const table = el('table', {}, el('caption', { text: caption }), el('thead', {}, head), body);
  // The table scrolls inside its own box; the page never scrolls sideways (390 px).
  const box = el('div', { class: 'tabela-caixa', tabindex: '0', role: 'region', 'aria-label': caption }, table);
  const prev = el('button', { type: 'button', text: 'Página anterior' });
  const next = el('button', { type: 'button', text: 'Página seguinte' });
  const position = el('span', { class: 'posicao' });
  prev.addEventListener('click', () => update({ page: view.page - 1 }));
  next.addEventListener('click', () => update({ page: view.page + 1 }));
  const pager = el('nav', { class: 'paginas', 'aria-label': `Páginas: ${caption}` }, prev, position, next);
  parts.push(summary, box, pager);
  container.replaceChildren(...parts);
  for (const control of waitForAll) control.disabled = true;

  function show(page) {
    view.page = page.page;
    body.replaceChildren(
      ...page.cells.map((cells) =>
        el(
          'tr',
          {},
          ...cells.map((text, i) =>
            el('td', columns[i].numeric ? { text, class: 'numero' } : columns[i].quebra ? { text, class: 'quebra' } : { text }),
          ),
        ),
      ),
    );
    summary.textContent = loading
      ? `${page.total.toLocaleString('pt-BR')} linhas carregadas até agora…`
      : `${page.matched} de ${page.total}${page.more ? '+' : ''} linhas`;
    position.textContent = `Página ${page.page + 1} de ${page.pages}${page.more || loading ? '+' : ''}`;
    prev.disabled = page.page === 0;
    next.disabled = page.page >= page.pages - 1 && !page.more;
    if (sortable) headers.forEach((th, i) => th.setAttribute('aria-sort', columns[i].key === view.sort ? view.dir : 'none'));
  }

  /** Asks the source for the view with `change`; an answer overtaken by a later question is dropped. */
  async function update(change) {
    Object.assign(view, change);
    const mine = ++asked;
    prev.disabled = true;
    next.disabled = true;
    try {
      const page = await source.page({ ...view });
      if (mine === asked && container.contains(body)) show(page);
    } catch (err) {
      if (mine === asked) container.dispatchEvent(new CustomEvent('falha', { detail: err, bubbles: true }));
    }
  }

  source.onProgress?.((loaded) => {
    if (loading) summary.textContent = `${loaded.toLocaleString('pt-BR')} linhas carregadas até agora…`;
  });
  const ready = source.done.then(
    (all) => {
      loading = false;
      if (!container.contains(body)) return all;
      for (const [word, n] of all.counts) {
        counts.append(el('li', { text: `${word}: ${n}` }));
        select.append(el('option', { value: word, text: `${word} (${n})` }));
      }
      for (const { column, choice } of choices)
        for (const [word, n] of all.tallies?.[column.key] ?? []) choice.append(el('option', { value: word, text: `${word} (${n})` }));
      for (const control of waitForAll) control.disabled = false;
      void update({});
      return all;
    },
    (err) => {
      container.dispatchEvent(new CustomEvent('falha', { detail: err, bubbles: true }));
      throw err;
    },
  );
  if (source.first) show(source.first);
  else void update({});
  return { ready };
}
