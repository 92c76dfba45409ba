// A table of any size: only the screen page (100 rows) is in the DOM, and it comes from a
// source that filters and sorts where the rows are (a worker for task results, the main thread
// for small lists, the service itself for query pages). Sortable headers (aria-sort), a text
// filter, an optional filter by one column's words with counts, one pager.
import { PAGE_SIZE, TableData } from './table-data.js';

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

/** A source over rows held here (small lists). */
export function localSource(rows, columns, options) {
  const data = new TableData(rows, columns, options);
  return { counts: data.counts(), page: async (view) => data.page(view), close() {} };
}

/**
 * A source over a task's result (`url`, the JSON list `list`) fetched and parsed in a worker.
 * Resolves once the first page is ready; rejects with `{ status, erro }` when the fetch fails.
 */
export function workerSource(url, headers, list, columns, options) {
  const worker = new Worker(new URL('./table-worker.js', import.meta.url), { type: 'module' });
  let next = 0;
  const waiting = new Map();
  let failed = null;
  worker.addEventListener('message', ({ data }) => {
    const settle = waiting.get(data.id);
    waiting.delete(data.id);
    settle?.(data);
  });
  worker.addEventListener('error', (event) => {
    failed = { status: 0, erro: `Falha ao ler o resultado: ${event.message ?? 'erro no processamento'}` };
    for (const settle of waiting.values()) settle({ error: failed });
    waiting.clear();
  });
  const ask = (message) =>
    new Promise((resolve, reject) => {
      if (failed) return reject(failed);
      const id = next++;
      waiting.set(id, (data) => (data.error ? reject(data.error) : resolve(data)));
      worker.postMessage({ ...message, id });
    });
  return ask({ type: 'load', url, headers, list, columns, options, view: {} }).then(
    (loaded) => ({
      counts: loaded.counts,
      first: loaded.page,
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
 * Renders a table into `container`. `columns`: `{ key, label }`; `source`: `page(view)` answers
 * `{ cells, matched, total, page, pages, more? }` (`more`: further rows the source has not
 * fetched yet). `first`: the first page when the source already has it. `textColumns` get a
 * text filter, `groupColumn` counts and a select; `sortable` makes the headers buttons.
 */
export function renderTable(container, { caption, columns, source, first = null, textColumns = [], groupColumn = null, sortable = true }) {
  const view = { text: '', group: '', sort: null, dir: 'ascending', page: 0 };
  let asked = 0;
  const id = container.id;
  const parts = [];

  const group = columns.find((c) => c.key === groupColumn);
  if (group) {
    const counts = el('ul', { class: 'contagens', 'aria-label': `Quantas por ${group.label.toLowerCase()}` });
    for (const [word, n] of source.counts) counts.append(el('li', { text: `${word}: ${n}` }));
    parts.push(counts);
  }
  const controls = el('div', { class: 'filtros-tabela' });
  if (textColumns.length > 0) {
    const searched = columns.filter((c) => textColumns.includes(c.key)).map((c) => c.label.toLowerCase());
    const input = el('input', { type: 'search', id: `${id}-filtro` });
    input.addEventListener('input', () => update({ text: input.value, page: 0 }));
    controls.append(el('label', { for: `${id}-filtro`, text: `Filtrar por ${searched.join(', ')}` }), input);
  }
  if (group) {
    const select = el('select', { id: `${id}-grupo` }, el('option', { value: '', text: 'todas' }));
    for (const [word, n] of source.counts) select.append(el('option', { value: word, text: `${word} (${n})` }));
    select.addEventListener('change', () => update({ group: select.value, page: 0 }));
    controls.append(el('label', { for: `${id}-grupo`, text: `Mostrar só: ${group.label}` }), select);
  }
  if (controls.childElementCount > 0) parts.push(controls);

  const summary = el('p', { class: 'resumo', 'aria-live': 'polite' });
  const head = el('tr');
  const headers = columns.map((column) => {
    const th = el('th', { scope: 'col' });
    if (sortable) {
      th.setAttribute('aria-sort', 'none');
      const button = el('button', { type: 'button', text: column.label });
      button.addEventListener('click', () => {
        const dir = view.sort === column.key && view.dir === 'ascending' ? 'descending' : 'ascending';
        update({ sort: column.key, dir, page: 0 });
      });
      th.append(button);
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
  const pager = el('nav', { class: 'paginas', 'aria-label': `Páginas de ${caption.toLowerCase()}` }, prev, position, next);
  parts.push(summary, box, pager);
  container.replaceChildren(...parts);

  function show(page) {
    view.page = page.page;
    body.replaceChildren(...page.cells.map((cells) => el('tr', {}, ...cells.map((text) => el('td', { text })))));
    summary.textContent = `${page.matched} de ${page.total}${page.more ? '+' : ''} linhas`;
    position.textContent = `Página ${page.page + 1} de ${page.pages}${page.more ? '+' : ''}`;
    prev.disabled = page.page === 0;
    next.disabled = page.page >= page.pages - 1 && !page.more;
    headers.forEach((th, i) => sortable && th.setAttribute('aria-sort', columns[i].key === view.sort ? view.dir : 'none'));
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

  if (first) show(first);
  else void update({});
  return { pageSize: PAGE_SIZE };
}
