// One CSV writer for the whole project: the query route's export, the upload routes' format=csv,
// the CLI's `lote` and the batches' combined divergences (SPEC §3.5).
// RFC 4180 output for `format=csv`: CRLF line ends, a field is quoted when it holds `"`, `,`,
// CR or LF, and quotes inside are doubled. SQL NULL is an empty field (RFC 4180 has no NULL;
// an empty string is written the same way, a known and documented ambiguity).

// A spreadsheet program opening the file evaluates a cell that starts with one of these as a
// formula (`=HYPERLINK(…)` can send a cell's contents out); a tab or CR before one is skipped by
// some importers. OWASP's CSV-injection advice: prefix such a cell with `'`, which every
// spreadsheet program shows as a text marker, not part of the value.
export const FORMULA_START = /^[=+\-@\t\r]/;

// Excel in Brazil (and LibreOffice told so) splits a `.csv` on `;`, not `,`: a value `x;=1+1;`
// there becomes three cells, the second a formula (issue 50). Quoting the value would not help:
// such a reader honours a quote only where one of *its* cells starts, and a comma-CSV value starts
// after a `,`, mid-cell for it. So every piece such a reader can cut out of a value is guarded
// like a whole cell: a `'` right after the `;` when spaces (any Unicode space: a no-break space
// before `=` is trimmed by such a reader too, issue 59) or quotes and then a formula trigger follow. An LF counts as a `;` here: that reader does not honour the quote around a multi-line
// value either, so a line inside a value starts a row of its own for it. An RFC 4180 reader reads
// a value without such a piece exactly as before; with one it reads the `'` too, as it already
// does at a cell's start (SPEC §3.5, decided, issue 50).
export const FORMULA_PIECE = /[;\n](?=[\s"\u200b]*[=+\-@\t\r])/g;

/**
 * `value` as every CSV of the project writes it (SPEC §3.5): a `'` before a formula trigger at its
 * start and at the start of every piece a `;`-separated reader cuts out of it. The one guard of
 * the project's CSVs: every writer goes through `csvField`, which calls it.
 */
export function neutralizeFormulas(value: string): string {
  // Every field of every CSV passes here (a state's batch: tens of millions): the two tests below
  // are what FORMULA_PIECE and FORMULA_START say, without running a regex over a value that holds
  // neither `;` nor LF, nor over its whole length for its first character (7x faster on census
  // values; test/unit/csv-guard.test.ts checks them against the two expressions).
  const pieces = value.includes(';') || value.includes('\n') ? value.replace(FORMULA_PIECE, "$&'") : value;
  return startsWithTrigger(pieces) ? `'${pieces}` : pieces;
}

/** FORMULA_START.test(text), by its first character's code: `=`, `+`, `-`, `@`, tab, CR. */
function startsWithTrigger(text: string): boolean {
  const c = text.charCodeAt(0);
  return c === 0x3d || c === 0x2b || c === 0x2d || c === 0x40 || c === 0x09 || c === 0x0d;
}

export function csvField(value: string | null): string {
  if (value === null) return '';
  const text = neutralizeFormulas(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(values: readonly (string | null)[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** A header line and one line per row, batched into writes of about 64 KB. */
export function csvChunks(columns: readonly string[], rows: AsyncIterable<readonly (string | null)[]>): AsyncGenerator<string> {
  return csvRowChunks(rows, csvLine, csvLine(columns));
}

/** `first`, then `line(item)` for each item, batched into writes of about 64 KB. */
export async function* csvRowChunks<T>(
  items: AsyncIterable<T> | Iterable<T>,
  line: (item: T) => string,
  first = '',
): AsyncGenerator<string> {
  let batch = first;
  for await (const item of items) {
    batch += line(item);
    if (batch.length >= 64 * 1024) {
      yield batch;
      batch = '';
    }
  }
  if (batch.length > 0) yield batch;
}
