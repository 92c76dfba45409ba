// A horizontal stacked bar chart drawn as SVG by the page itself (SPEC §10: nothing loaded from
// elsewhere, CSP 'self'): one bar per row, one segment per kind, colours from app.css classes (so
// high contrast can change them; no inline style). The chart is an image with a name and a
// description for screen readers; the same numbers are in the table beside it.
const SVG = 'http://www.w3.org/2000/svg';
const BAR = 18;
const GAP = 10;
const LABEL_LINE = 16;

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** `label` cut to `max` characters (the whole label stays in the bar's tooltip and in the table). */
const cut = (label, max) => (label.length > max ? `${label.slice(0, max - 1)}…` : label);

let charts = 0;

/**
 * A <figure> with the chart and its legend. `kinds`: `[{ key, label }]`, in stacking order (each
 * drawn with the class `serie-<key>`); `rows`: `[{ label, values: { [key]: n }, note? }]`, in the order
 * to draw them (`note`: words after the bar's number); `title` and `description` name the image;
 * `width` is the space it has (px).
 * Narrow spaces put each label above its bar instead of beside it.
 */
export function stackedBarChart({ title, description, kinds, rows, width }) {
  const id = `grafico-${++charts}`;
  const narrow = width < 560;
  const labelWidth = narrow ? 0 : Math.min(220, Math.round(width * 0.28));
  const numberWidth = 56;
  const barSpace = Math.max(40, width - labelWidth - numberWidth - 8);
  const totals = rows.map((row) => kinds.reduce((sum, kind) => sum + (row.values[kind.key] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const step = BAR + GAP + (narrow ? LABEL_LINE : 0);
  const height = Math.max(1, rows.length) * step;

  const image = svg('svg', {
    class: 'grafico',
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-labelledby': `${id}-titulo ${id}-descricao`,
  });
  image.append(svg('title', { id: `${id}-titulo` }, title), svg('desc', { id: `${id}-descricao` }, description));
  const maxChars = narrow ? Math.floor(width / 7.5) : Math.floor(labelWidth / 7.5);
  rows.forEach((row, i) => {
    const top = i * step + (narrow ? LABEL_LINE : 0);
    const group = svg('g', { class: 'barra', 'data-rotulo': row.label, 'data-total': totals[i] });
    const labelY = narrow ? top - 4 : top + BAR / 2 + 5;
    group.append(
      svg(
        'text',
        { x: narrow ? 0 : labelWidth - 6, y: labelY, 'text-anchor': narrow ? 'start' : 'end', class: 'rotulo' },
        cut(row.label, maxChars),
      ),
    );
    let x = labelWidth;
    for (const kind of kinds) {
      const value = row.values[kind.key] ?? 0;
      if (value === 0) continue;
      const w = (value / max) * barSpace;
      const rect = svg('rect', {
        x,
        y: top,
        width: w,
        height: BAR,
        class: `serie serie-${kind.key}`,
        'data-chave': kind.key,
        'data-valor': value,
      });
      rect.append(svg('title', {}, `${row.label} — ${kind.label}: ${value.toLocaleString('pt-BR')}`));
      group.append(rect);
      x += w;
    }
    const number = totals[i].toLocaleString('pt-BR') + (row.note ? ` (${row.note})` : '');
    group.append(svg('text', { x: x + 6, y: top + BAR / 2 + 5, class: 'numero' }, number));
    image.append(group);
  });

  const legend = document.createElement('ul');
  legend.className = 'legenda';
  legend.setAttribute('aria-label', 'Legenda');
  for (const kind of kinds) {
    const item = document.createElement('li');
    const swatch = svg('svg', { width: 14, height: 14, 'aria-hidden': 'true', focusable: 'false' });
    swatch.append(svg('rect', { width: 14, height: 14, class: `serie serie-${kind.key}` }));
    item.append(swatch, ` ${kind.label}`);
    legend.append(item);
  }
  const figure = document.createElement('figure');
  figure.className = 'figura-grafico';
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  figure.append(caption, legend, image);
  return figure;
}
