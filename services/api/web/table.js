// A table for up to hundreds of thousands of rows: sortable columns (aria-sort), a text filter,
// an optional filter by one column's values with counts, and on-screen pages of 100 rows, so only
// 100 rows are ever in the DOM.
const PAGE = 100;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

/**
 * Renders `rows` (objects) into `container`. `columns` are the keys shown; `textColumns` the ones
 * the text filter searches; `groupColumn` (optional) gets counts and a select filter.
 */
export function renderTable(container, { caption, columns, rows, textColumns = columns, groupColumn = null }) {
  let sortColumn = null;
  let sortDir = 'ascending';
  let text = '';
  let group = '';
  let page = 0;
  let view = rows;

  const id = container.id;
  const filterInput = el('input', { type: 'search', id: `${id}-filtro` });
  const filterLabel = el('label', { for: `${id}-filtro`, text: `Filtrar (${textColumns.join(', ')})` });
  const controls = el('div', { class: 'filtros-tabela' }, filterLabel, filterInput);
  let groupSelect = null;
  const counts = el('ul', { class: 'contagens', 'aria-label': `Contagem por ${groupColumn}` });
  if (groupColumn) {
    const tally = new Map();
    for (const row of rows) {
      const value = row[groupColumn] ?? '(nenhuma)';
      tally.set(value, (tally.get(value) ?? 0) + 1);
    }
    groupSelect = el('select', { id: `${id}-grupo` }, el('option', { value: '', text: 'todas' }));
    for (const [value, n] of [...tally].sort((a, b) => b[1] - a[1])) {
      counts.append(el('li', { text: `${value}: ${n}` }));
      groupSelect.append(el('option', { value, text: `${value} (${n})` }));
    }
    controls.append(el('label', { for: `${id}-grupo`, text: `Filtrar por ${groupColumn}` }), groupSelect);
  }
  const summary = el('p', { 'aria-live': 'polite' });
  const table = el('table');
  const head = el('tr');
  const headers = columns.map((column) => {
    const button = el('button', { type: 'button', text: column });
    const th = el('th', { scope: 'col', 'aria-sort': 'none' }, button);
    button.addEventListener('click', () => {
      sortDir = sortColumn === column && sortDir === 'ascending' ? 'descending' : 'ascending';
      sortColumn = column;
      apply();
    });
    head.append(th);
    return th;
  });
  const body = el('tbody');
  table.append(el('caption', { text: caption }), el('thead', {}, head), body);
  const prev = el('button', { type: 'button', text: 'Página anterior' });
  const next = el('button', { type: 'button', text: 'Página seguinte' });
  const position = el('span');
  const pager = el('div', { class: 'paginas' }, prev, position, next);
  prev.addEventListener('click', () => show(page - 1));
  next.addEventListener('click', () => show(page + 1));
  filterInput.addEventListener('input', () => {
    text = filterInput.value.trim().toLowerCase();
    apply();
  });
  groupSelect?.addEventListener('change', () => {
    group = groupSelect.value;
    apply();
  });

  function apply() {
    view = rows.filter(
      (row) =>
        (!group || (row[groupColumn] ?? '(nenhuma)') === group) &&
        (!text ||
          textColumns.some((column) =>
            String(row[column] ?? '')
              .toLowerCase()
              .includes(text),
          )),
    );
    if (sortColumn) {
      const factor = sortDir === 'ascending' ? 1 : -1;
      const collator = new Intl.Collator('pt-BR', { numeric: true });
      view = [...view].sort((a, b) => factor * collator.compare(String(a[sortColumn] ?? ''), String(b[sortColumn] ?? '')));
    }
    headers.forEach((th, i) => th.setAttribute('aria-sort', columns[i] === sortColumn ? sortDir : 'none'));
    show(0);
  }

  function show(n) {
    const pages = Math.max(1, Math.ceil(view.length / PAGE));
    page = Math.min(Math.max(0, n), pages - 1);
    const slice = view.slice(page * PAGE, page * PAGE + PAGE);
    body.replaceChildren(
      ...slice.map((row) =>
        el(
          'tr',
          {},
          ...columns.map((column) => el('td', { text: row[column] === null || row[column] === undefined ? '' : String(row[column]) })),
        ),
      ),
    );
    summary.textContent = `${view.length} de ${rows.length} linhas`;
    position.textContent = `Página ${page + 1} de ${pages}`;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }

  container.replaceChildren(...(groupColumn ? [counts] : []), controls, summary, table, pager);
  apply();
}
