// The rows behind a table, and the one screen page of them the table shows. Used inside the
// table worker (large results: parsed, filtered and sorted off the main thread) and on the main
// thread for small ones. Only the page on screen is ever turned into text cells: 150,000 rows
// are neither rendered nor sorted until someone asks for an order.
import { WRITERS } from './inep-values.js';
import { orientacao } from './orientacao.js';

export const PAGE_SIZE = 100;
/** Beside a value the corrected file cannot take (SPEC §3.4): the file keeps the text file's. */
export const NAO_APLICADA = ' (não aplicada)';
/** How many of the values the corrected file cannot take are listed by name (the count is whole). */
const LISTED = 200;

/**
 * A column: `key` (the item's field), `label` (the header), optional `from` (the field whose
 * value it shows, when that is not `key`) and `values` (the words shown for a value; `null` and
 * a missing value look up `"null"`). Two kinds follow the corrected file (SPEC §3.4): `escrito`
 * shows a person's field as the file writes it (or the value marked as not applied), `aplicada`
 * says whether the file applies a divergence; `orientacao` is the divergence's "O que fazer".
 */
export function cellText(row, column) {
  if (column.escrito) return written(row, column);
  if (column.aplicada) return applies(row) ? 'Sim' : 'Não';
  if (column.orientacao) return orientacao(row);
  const raw = row[column.from ?? column.key];
  if (column.values) {
    const word = column.values[raw === null || raw === undefined ? 'null' : String(raw)];
    if (word !== undefined) return word;
  }
  return raw === null || raw === undefined ? '' : String(raw);
}

/** A value that cannot be written is the tax authority's, not applied (an empty one is the text file's: nothing to write). */
const cannotWrite = (raw, field) => raw !== null && raw !== undefined && raw !== '' && WRITERS[field](String(raw)) === null;

/**
 * A person's field as the corrected file writes it: the answer's `arquivo_<field>` (decided, issue
 * 56), and beside it the Receita's value when the file keeps another (`… (não aplicada: Receita
 * …)`). An answer from before it has only the Receita's value: the file writes it when it can.
 */
function written(row, column) {
  const receita = row[column.key];
  const arquivo = row[`arquivo_${column.key}`];
  if (arquivo === undefined) {
    if (receita === null || receita === undefined || receita === '') return '';
    return WRITERS[column.key](String(receita)) ?? `${receita}${NAO_APLICADA}`;
  }
  return keptOut(row, column) ? `${arquivo}${NAO_APLICADA.slice(0, -1)}: Receita ${receita})` : String(arquivo);
}

/** The file keeps another value than the Receita's in `column` (the field is among the person's `nao_aplicadas`). */
const keptOut = (row, column) =>
  typeof row.nao_aplicadas === 'string' && row.nao_aplicadas.split('; ').some((item) => item.startsWith(`${column.campo}:`));

/**
 * A divergence the corrected file applies: what its `correcao` says (SPEC §11); a result from
 * before it (no `correcao`) by the old rule, one of fields 4–7 with a value the file can write.
 */
const applies = (row) =>
  row.correcao !== undefined
    ? row.correcao === 'arquivo' || row.correcao === 'educacenso'
    : row.chave in WRITERS && WRITERS[row.chave](String(row.correto ?? '')) !== null;

export class TableData {
  /**
   * `textColumns`: keys the text filter searches; `groupColumn`: the key counted and filtered by
   * value; `tallyColumns`: keys whose words are counted for the page's explanations;
   * `selectColumns`: tallied keys the view can also be narrowed by, one word each (`filters`).
   */
  constructor(rows, columns, { textColumns = [], groupColumn = null, tallyColumns = [], selectColumns = [] } = {}) {
    this.rows = rows;
    this.columns = columns;
    this.searched = columns.filter((c) => textColumns.includes(c.key));
    this.group = columns.find((c) => c.key === groupColumn) ?? null;
    this.tallied = columns.filter((c) => tallyColumns.includes(c.key) || selectColumns.includes(c.key));
    this.selectable = columns.filter((c) => selectColumns.includes(c.key));
    this.viewKey = '';
    this.view = rows;
  }

  /** How many rows hold each word of `column` (the group column by default), most frequent first. */
  counts(column = this.group) {
    if (column === null) return [];
    const tally = new Map();
    for (const row of this.rows) {
      const word = cellText(row, column);
      tally.set(word, (tally.get(word) ?? 0) + 1);
    }
    return [...tally].sort((a, b) => b[1] - a[1]);
  }

  /**
   * What the page explains beside the table: the words of each tallied column, and the values
   * the corrected file cannot take (who, which field, the value), the first `LISTED` by name.
   */
  summary() {
    const tallies = Object.fromEntries(this.tallied.map((column) => [column.key, this.counts(column)]));
    const fields = this.columns.filter((c) => c.escrito);
    const listed = [];
    let count = 0;
    const list = (row, campo, valor) => {
      if (++count <= LISTED) listed.push({ codigo: row.codigo_na_escola, linha: row.linha, campo, valor });
    };
    for (const row of this.rows) {
      // The answer says what the file leaves out, and why: the same count as the corrected file's
      // `Censo-Correcoes-Nao-Aplicadas` (one count, SPEC §11).
      if (typeof row.nao_aplicadas === 'string') {
        for (const item of row.nao_aplicadas ? row.nao_aplicadas.split('; ') : []) {
          const at = item.indexOf(': ');
          list(row, item.slice(0, at), item.slice(at + 2));
        }
        continue;
      }
      for (const column of fields) if (cannotWrite(row[column.key], column.key)) list(row, column.label, String(row[column.key]));
    }
    return { tallies, naoAplicadas: { count, listed } };
  }

  /** `view`: `{ text, group, filters, sort, dir, page }`; answers the page's cells and where it is. */
  page({ text = '', group = '', filters = {}, sort = null, dir = 'ascending', page = 0 } = {}) {
    // Only the selectable columns' words narrow the view: a key the table does not offer is no filter.
    const chosen = this.selectable.filter((c) => filters[c.key]).map((c) => [c, filters[c.key]]);
    const key = JSON.stringify([text, group, chosen.map(([c, word]) => [c.key, word]), sort, dir]);
    // Paging through the same view reuses it; only a new filter or order recomputes.
    if (key !== this.viewKey) {
      this.viewKey = key;
      this.view = this.select(text.trim().toLowerCase(), group, chosen, sort, dir);
    }
    const pages = Math.max(1, Math.ceil(this.view.length / PAGE_SIZE));
    const at = Math.min(Math.max(0, page), pages - 1);
    const cells = this.view.slice(at * PAGE_SIZE, (at + 1) * PAGE_SIZE).map((row) => this.columns.map((c) => cellText(row, c)));
    return { cells, matched: this.view.length, total: this.rows.length, page: at, pages };
  }

  select(text, group, chosen, sort, dir) {
    let view = this.rows;
    if (text || group || chosen.length > 0) {
      view = view.filter(
        (row) =>
          (!group || cellText(row, this.group) === group) &&
          chosen.every(([column, word]) => cellText(row, column) === word) &&
          (!text || this.searched.some((column) => cellText(row, column).toLowerCase().includes(text))),
      );
    }
    const column = this.columns.find((c) => c.key === sort);
    if (column) {
      const factor = dir === 'ascending' ? 1 : -1;
      const collator = new Intl.Collator('pt-BR', { numeric: true });
      // Each row's text once, not once per comparison.
      const keyed = view.map((row, i) => [cellText(row, column), i, row]);
      keyed.sort((a, b) => factor * collator.compare(a[0], b[0]) || a[1] - b[1]);
      view = keyed.map((entry) => entry[2]);
    }
    return view;
  }
}
