// The Lotes tab (SPEC §7.3, §10): the caller's batches, newest first; a finished batch's summary
// per school as a chart (one bar per school, stacked by kind of divergence, the school with the
// most left to do first) and as a table with the same numbers; and, for an earlier batch chosen
// as the previous round, the comparison with its three counts per school, its rows downloadable
// as XLSX. Everything comes from the service's JSON answers; the downloads from the same routes,
// named after the batch. A batch can be deleted from the list (LGPD), and leaves the screen with it.
import { deleteCall, fileSafe, getJson } from './api.js';
import { stackedBarChart } from './chart.js';
import { el, localSource, renderTable } from './table.js';

const $ = (id) => document.getElementById(id);

const ESTADO_LOTE = {
  aberto: 'Aberto (recebendo arquivos)',
  processando: 'Processando',
  concluido: 'Concluído',
  cancelado: 'Cancelado',
};
/** The kinds of divergence of a summary (SPEC §10), in the words of the Divergências table. */
export const TIPOS = [
  { key: 'cpf', label: 'CPF' },
  { key: 'nome', label: 'Nome' },
  { key: 'data_nascimento', label: 'Data de nascimento' },
  { key: 'inep', label: 'INEP' },
  { key: 'nome_mae', label: 'Nome da mãe' },
  { key: 'nome_pai', label: 'Nome do pai' },
  { key: 'outro', label: 'Outro campo' },
];
export const SITUACOES = [
  { key: 'resolvidas', label: 'Resolvidas' },
  { key: 'persistentes', label: 'Persistentes' },
  { key: 'novas', label: 'Novas' },
];
/** What the later round still holds, split (issue 56): a `grafia` divergence asks no one to act. */
export const ABERTAS = [
  { key: 'pendentes', label: 'Pendentes' },
  { key: 'grafia', label: 'Só grafia' },
];
const SEM_REFERENCIA = '(sem referência)';
/** More bars than this are unreadable: the chart shows the schools with most left to do, the table all. */
export const MAX_BARRAS = 40;
const PAGE = 100;

const number = (n) => n.toLocaleString('pt-BR');
const plural = (n, one, many) => `${number(n)} ${n === 1 ? one : many}`;
const escola = (referencia) => referencia ?? SEM_REFERENCIA;
const collator = new Intl.Collator('pt-BR', { numeric: true });
const when = (iso) => (iso ? new Date(iso).toLocaleString('pt-BR', { dateStyle: 'short', timeStyle: 'short' }) : '—');
const nameOf = (lote) => lote.nome || `Lote de ${when(lote.criado_em)}`;
/** A download named after its batch (`Rodada-2-resumo.xlsx`): a folder of downloads says whose each one is. */
const fileOf = (lote, what) => `${fileSafe(nameOf(lote)) || 'lote'}-${what}`;
/** The spreadsheets' word for `referencia` (SPEC §3.5), with what it is: the page says what the downloads say. */
const REFERENCIA = 'Referência (escola)';

/** Rows in the order of what is left to do: most first, ties by school name. */
export function byWorkLeft(rows, left) {
  return [...rows].sort((a, b) => left(b) - left(a) || collator.compare(escola(a.referencia), escola(b.referencia)));
}

/** The chart's width: the space its box has now (a hidden box has none yet: a usual width). */
const widthOf = (container) => Math.max(280, Math.floor(container.clientWidth || 720));

/** A one-row table of totals, under the per-school table. */
/** A table of schools (one row per `referencia`, named as the page names them), sortable by its numbers. */
function schoolTable(id, caption, columns, rows) {
  renderTable(document.getElementById(id), {
    caption,
    columns,
    source: localSource(
      rows.map((r) => ({ ...r, escola: escola(r.referencia) })),
      columns,
      { textColumns: ['escola'] },
    ),
    textColumns: ['escola'],
  });
}

function totalTable(caption, columns, total) {
  const head = el(
    'tr',
    {},
    ...columns.map((c) => el('th', c.numeric ? { scope: 'col', class: 'numero', text: c.label } : { scope: 'col', text: c.label })),
  );
  const row = el(
    'tr',
    {},
    ...columns.map((c, i) =>
      i === 0 ? el('th', { scope: 'row', text: 'Total' }) : el('td', { class: 'numero', text: String(total[c.key] ?? 0) }),
    ),
  );
  const table = el('table', { class: 'total' }, el('caption', { text: caption }), el('thead', {}, head), el('tbody', {}, row));
  return el('div', { class: 'tabela-caixa', tabindex: '0', role: 'region', 'aria-label': caption }, table);
}

/**
 * Wires the tab. `box`: the panel's messages; `guarded(box, action)` runs an action with its
 * errors shown there; `download(box, path, fallback)` saves a file from the service.
 */
export function initLotes({ box, guarded, download }) {
  const lotes = [];
  let cursor = null;
  let loaded = false;
  let shown = null; // { lote, comparacao: { anterior } | null }
  // Each chart is drawn for the width its box has, and again when that width changes (a turned
  // phone, a resized window, a box that was hidden when the chart arrived).
  const drawers = new Map(); // container → { draw(width), width }
  const resized = new ResizeObserver((entries) => {
    for (const { target } of entries) {
      const chart = drawers.get(target);
      const width = widthOf(target);
      if (chart && target.clientWidth > 0 && width !== chart.width) {
        chart.width = width;
        target.replaceChildren(chart.draw(width));
      }
    }
  });
  function drawChart(container, draw) {
    const width = widthOf(container);
    drawers.set(container, { draw, width });
    container.replaceChildren(draw(width));
    resized.observe(container);
  }
  /** A chart taken off the screen: not drawn again when its box is resized. */
  function clearChart(container) {
    resized.unobserve(container);
    drawers.delete(container);
    container.replaceChildren();
  }

  function renderList() {
    const container = $('lista-lotes');
    if (lotes.length === 0) {
      container.replaceChildren(
        el('p', { class: 'explica', text: 'Nenhum lote ainda. Envie vários retornos de uma vez na aba Divergências.' }),
      );
      return;
    }
    const head = el(
      'tr',
      {},
      ...['Lote', 'Estado', 'Criado em', 'Arquivos', 'Ações'].map((label) => el('th', { scope: 'col', text: label })),
    );
    const rows = lotes.map((lote) => {
      const { total, concluida, falhou } = lote.tarefas;
      const files = `${plural(total, 'arquivo', 'arquivos')}: ${number(concluida)} lidos, ${number(falhou)} com erro`;
      const resumo =
        lote.estado === 'concluido'
          ? el('button', { type: 'button', 'data-resumo': lote.id, text: 'Ver resumo', 'aria-label': `Ver resumo: ${nameOf(lote)}` })
          : el('span', { text: 'Resumo quando concluído' });
      // Deleting one's own batch (LGPD): its files' results go from the service at once.
      const apagar = el('button', { type: 'button', 'data-apagar-lote': lote.id, text: 'Apagar', 'aria-label': `Apagar: ${nameOf(lote)}` });
      const action = el('div', { class: 'acoes-lote' }, resumo, apagar);
      return el(
        'tr',
        { 'data-lote': lote.id },
        el('th', { scope: 'row', text: nameOf(lote) }),
        el('td', { text: ESTADO_LOTE[lote.estado] ?? lote.estado }),
        el('td', { text: when(lote.criado_em) }),
        el('td', { text: files }),
        el('td', {}, action),
      );
    });
    const table = el(
      'table',
      { class: 'lista-lotes' },
      el('caption', { text: 'Seus lotes, do mais novo ao mais antigo' }),
      el('thead', {}, head),
      el('tbody', {}, ...rows),
    );
    container.replaceChildren(el('div', { class: 'tabela-caixa', tabindex: '0', role: 'region', 'aria-label': 'Seus lotes' }, table));
    $('mais-lotes').hidden = cursor === null;
  }

  async function loadPage({ more = false } = {}) {
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (more && cursor) params.set('cursor', cursor);
    const answer = await getJson(`/api/lotes?${params}`);
    if (!more) lotes.length = 0;
    lotes.push(...answer.lotes);
    cursor = answer.next_cursor;
    loaded = true;
    renderList();
    box.status(`${plural(lotes.length, 'lote', 'lotes')} na lista${cursor ? '; há mais: use “Mostrar lotes mais antigos”' : ''}.`);
  }

  /** Earlier rounds for `lote`: other finished batches created before it, newest first. */
  const earlierThan = (lote) =>
    lotes.filter((other) => other.id !== lote.id && other.estado === 'concluido' && other.criado_em < lote.criado_em);

  function fillEarlier(lote) {
    const select = $('lote-anterior');
    const earlier = earlierThan(lote);
    select.replaceChildren(
      ...earlier.map((other) => el('option', { value: other.id, text: `${nameOf(other)} (${when(other.criado_em)})` })),
    );
    const none = earlier.length === 0;
    select.disabled = none;
    $('form-comparacao').querySelector('button[type="submit"]').disabled = none;
    $('dica-comparacao').textContent = none
      ? 'Não há, na lista, um lote concluído enviado antes deste para comparar.'
      : 'Só aparecem lotes concluídos, enviados antes deste.';
  }

  async function openResumo(lote) {
    box.status('Carregando o resumo…');
    const answer = await getJson(`/api/lotes/${lote.id}/resumo?format=json`);
    shown = { lote, comparacao: null };
    $('comparacao-lote').hidden = true;
    $('resumo-lote').hidden = false;
    $('titulo-resumo').textContent = `Resumo por escola: ${nameOf(lote)}`;
    // What is left to fix first: a `grafia` divergence asks nothing of anyone (issue 56).
    const aCorrigir = (r) => r.divergencias - (r.correcao_grafia ?? 0);
    const rows = byWorkLeft(answer.resumo, (r) => aCorrigir(r) * 1e12 + r.divergencias * 1e6 + r.falhas);
    const { total } = answer;
    const grafia = total.correcao_grafia ?? 0;
    const kinds = TIPOS.filter((tipo) => total[tipo.key] > 0).map((tipo) => `${tipo.label}: ${number(total[tipo.key])}`);
    $('explica-resumo').textContent =
      `${plural(rows.length, 'escola', 'escolas')}, ${plural(total.arquivos, 'arquivo', 'arquivos')}` +
      (total.falhas > 0 ? ` (${plural(total.falhas, 'com erro', 'com erro')}: envie-os de novo)` : '') +
      `, ${plural(total.divergencias, 'divergência', 'divergências')}${grafia === 0 ? ' a corrigir' : ''}` +
      `${kinds.length ? ` (${kinds.join('; ')})` : ''}` +
      (grafia === 0 ? '' : `, ${number(aCorrigir(total))} a corrigir e ${plural(grafia, 'só de grafia', 'só de grafia')} (nada a fazer)`) +
      '. A escola com mais a corrigir vem primeiro.';

    const drawn = rows.slice(0, MAX_BARRAS);
    drawChart($('grafico-resumo'), (width) =>
      stackedBarChart({
        title: `Divergências por escola${rows.length > MAX_BARRAS ? ` (as ${MAX_BARRAS} com mais a corrigir, de ${rows.length})` : ''}`,
        description:
          'Barras horizontais, uma por escola, da que tem mais divergências para a que tem menos, cada uma dividida pelo tipo de ' +
          'dado. Os mesmos números estão na tabela a seguir.',
        kinds: TIPOS,
        // A school whose file failed has something to do even with no divergence: said beside its bar.
        rows: drawn.map((r) => ({
          label: escola(r.referencia),
          values: r,
          note: r.falhas ? plural(r.falhas, 'arquivo com erro', 'arquivos com erro') : '',
        })),
        width,
      }),
    );
    const columns = [
      { key: 'escola', label: REFERENCIA },
      { key: 'arquivos', label: 'Arquivos', numeric: true },
      { key: 'falhas', label: 'Arquivos com erro', numeric: true },
      { key: 'divergencias', label: 'Divergências', numeric: true },
      ...TIPOS.map((tipo) => ({ ...tipo, numeric: true })),
    ];
    schoolTable('tabela-resumo', 'Divergências por escola (a que tem mais a corrigir primeiro)', columns, rows);
    $('total-resumo').replaceChildren(totalTable('Total do lote', columns, total));
    fillEarlier(lote);
    $('titulo-resumo').focus();
    box.status(
      `Resumo do lote: ${plural(rows.length, 'escola', 'escolas')}, ${plural(total.divergencias, 'divergência', 'divergências')}.`,
    );
  }

  async function openComparacao(atual, anterior) {
    box.status('Comparando as rodadas…');
    const answer = await getJson(`/api/lotes/${atual.id}/comparacao?anterior=${encodeURIComponent(anterior.id)}&format=json`);
    shown = { lote: atual, comparacao: { anterior } };
    $('comparacao-lote').hidden = false;
    $('titulo-comparacao').textContent = `Comparação: ${nameOf(anterior)} → ${nameOf(atual)}`;
    const { total } = answer;
    $('explica-comparacao').textContent =
      `Da rodada anterior para esta: ${plural(total.resolvidas, 'divergência resolvida', 'divergências resolvidas')}, ` +
      `${plural(total.persistentes, 'persistente', 'persistentes')} e ${plural(total.novas, 'nova', 'novas')}. ` +
      `Das persistentes e novas, ${plural(total.pendentes, 'pede', 'pedem')} correção e ` +
      `${plural(total.grafia, 'é só grafia', 'são só grafia')} (a forma como o Censo escreve o valor: nada a fazer). ` +
      'A escola com mais divergências pendentes vem primeiro.';
    const semPar = answer.referencias_sem_par;
    const only = (rodada) =>
      semPar
        .filter((s) => s.rodada === rodada)
        .map((s) => escola(s.referencia))
        .join(', ');
    $('sem-par').hidden = semPar.length === 0;
    $('sem-par').textContent =
      semPar.length === 0
        ? ''
        : `${plural(semPar.length, 'escola não foi comparada', 'escolas não foram comparadas')} por estar em uma rodada só` +
          (only('anterior') ? ` — só na anterior: ${only('anterior')}` : '') +
          (only('atual') ? ` — só nesta: ${only('atual')}` : '') +
          '.';
    const rows = byWorkLeft(answer.resumo, (r) => r.pendentes * 1e12 + (r.persistentes + r.novas) * 1e6 + r.resolvidas);
    drawChart($('grafico-comparacao'), (width) =>
      stackedBarChart({
        title: `Resolvidas, persistentes e novas por escola${rows.length > MAX_BARRAS ? ` (as ${MAX_BARRAS} com mais a corrigir, de ${rows.length})` : ''}`,
        description:
          'Barras horizontais, uma por escola, da que tem mais divergências pendentes para a que tem menos, cada uma ' +
          'dividida em resolvidas, persistentes e novas. Os mesmos números estão na tabela a seguir.',
        kinds: SITUACOES,
        rows: rows.slice(0, MAX_BARRAS).map((r) => ({ label: escola(r.referencia), values: r })),
        width,
      }),
    );
    const columns = [{ key: 'escola', label: REFERENCIA }, ...[...SITUACOES, ...ABERTAS].map((s) => ({ ...s, numeric: true }))];
    schoolTable('tabela-comparacao', 'Comparação por escola (a que tem mais a corrigir primeiro)', columns, rows);
    $('total-comparacao').replaceChildren(totalTable('Total da comparação', columns, total));
    $('titulo-comparacao').focus();
    box.status(
      `Comparação: ${plural(total.resolvidas, 'resolvida', 'resolvidas')}, ${plural(total.persistentes, 'persistente', 'persistentes')}, ` +
        `${plural(total.novas, 'nova', 'novas')}; ${plural(total.pendentes, 'pendente', 'pendentes')}, ${plural(total.grafia, 'só de grafia', 'só de grafia')}.`,
    );
  }

  const find = (id) => lotes.find((lote) => lote.id === id);

  /** A batch gone from the service: gone from the list, and its summary or comparison from the screen. */
  function forget(id) {
    const at = lotes.findIndex((lote) => lote.id === id);
    if (at >= 0) lotes.splice(at, 1);
    if (shown && (shown.lote.id === id || shown.comparacao?.anterior.id === id)) {
      const all = shown.lote.id === id;
      $('comparacao-lote').hidden = true;
      clearChart($('grafico-comparacao'));
      for (const part of ['tabela-comparacao', 'total-comparacao']) $(part).replaceChildren();
      $('sem-par').textContent = '';
      if (all) {
        $('resumo-lote').hidden = true;
        clearChart($('grafico-resumo'));
        for (const part of ['tabela-resumo', 'total-resumo']) $(part).replaceChildren();
        $('explica-resumo').textContent = '';
        shown = null;
      } else {
        shown = { lote: shown.lote, comparacao: null };
      }
    }
    if (shown) fillEarlier(shown.lote);
    if (loaded) renderList();
  }

  async function apagar(lote) {
    if (!lote || !window.confirm(`Apagar o lote “${nameOf(lote)}” e todos os seus resultados do serviço?`)) return;
    await deleteCall(`/api/lotes/${lote.id}`);
    forget(lote.id);
    // The Divergências tab may still show this batch, just sent: it clears it too.
    document.dispatchEvent(new CustomEvent('lote-apagado', { detail: lote.id }));
    box.status(`Lote “${nameOf(lote)}” apagado do serviço.`);
    // Its button is gone with its row: the keyboard goes on from the list, not from the page's top.
    const list = $('lista-lotes').querySelector('.tabela-caixa');
    (list ?? $('atualizar-lotes')).focus();
  }

  // One request of the tab at a time: a double click asks once.
  let running = false;
  const run = (action) =>
    guarded(box, async () => {
      if (running) return;
      running = true;
      try {
        await action();
      } finally {
        running = false;
      }
    });

  $('atualizar-lotes').addEventListener('click', () => run(() => loadPage()));
  $('mais-lotes').addEventListener('click', () => run(() => loadPage({ more: true })));
  $('lista-lotes').addEventListener('click', (e) => {
    const id = e.target.closest('button[data-resumo]')?.dataset.resumo;
    if (id) void run(() => openResumo(find(id)));
    const gone = e.target.closest('button[data-apagar-lote]')?.dataset.apagarLote;
    if (gone) void run(() => apagar(find(gone)));
  });
  // The summary's downloads and the letters to the schools (`/cartas`, issue 56): `resumo` or `cartas`, in a format.
  for (const button of document.querySelectorAll('[data-baixar-resumo], [data-baixar-cartas]')) {
    const [what, format] = button.dataset.baixarResumo ? ['resumo', button.dataset.baixarResumo] : ['cartas', button.dataset.baixarCartas];
    button.addEventListener('click', () =>
      run(
        async () =>
          shown &&
          (await download(
            box,
            `/api/lotes/${shown.lote.id}/${what}?format=${format}`,
            `${what}.${format}`,
            fileOf(shown.lote, `${what}.${format}`),
          )),
      ),
    );
  }
  $('form-comparacao').addEventListener('submit', (e) => {
    e.preventDefault();
    const anterior = find($('lote-anterior').value);
    if (shown && anterior) void run(() => openComparacao(shown.lote, anterior));
  });
  $('baixar-comparacao').addEventListener('click', () =>
    run(async () => {
      if (!shown?.comparacao) return;
      const anterior = encodeURIComponent(shown.comparacao.anterior.id);
      await download(
        box,
        `/api/lotes/${shown.lote.id}/comparacao?anterior=${anterior}&format=xlsx`,
        'comparacao.xlsx',
        fileOf(shown.lote, 'comparacao.xlsx'),
      );
    }),
  );

  return {
    /** The tab opened: its list, the first time (a new key or session reloads it with the button). */
    opened: () => (loaded ? Promise.resolve() : run(() => loadPage())),
    /** A batch deleted elsewhere on the page: off the list and the screen. */
    forget,
    /** A batch the page just sent: the list again, and its summary. */
    show: (id) =>
      run(async () => {
        await loadPage();
        const lote = find(id);
        if (lote?.estado === 'concluido') await openResumo(lote);
      }),
  };
}
