// The Consultas tab (SPEC §3.3, §3.6), shown only where the service has queries: the named
// queries with their labels and filters, one pager through the service's pages, and a CSV of
// everything. The list is asked for when the tab is first opened, never on load.
import { getBlob, getJson, save } from './api.js';
import { boxes, guarded } from './chave.js';
import { el, renderTable } from './table.js';
import { onTableFailure, plural, task } from './tarefas.js';

const $ = (id) => document.getElementById(id);

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
export function loadQueries() {
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

/** The tab's query choice, its form and the CSV export; its list waits for `loadQueries`. */
export function initConsultas() {
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
  onTableFailure('tabela-consulta', boxes.consultas);
}
