// A streaming xlsx writer for the spreadsheet answers (SPEC §3.5): one sheet (more past Excel's
// row limit, SPEC §7.3), the header row bold and frozen with an autofilter over it, every text
// cell an inline string styled as text (`@`), so a CPF keeps its leading zeros in any spreadsheet
// program. A cell given as a number (a summary's counts, issue 50) is a numeric cell, so that
// `=SOMA()` and sorting work on it. The sheet XML is produced row by row into the zip
// (zip-writer.ts), so 150,000 rows never become one string.
import { Readable } from 'node:stream';
import { ResultFile } from './result-file.js';
import { zipArchive, type ZipPart } from './zip-writer.js';

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const MAIN_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

// Every other .xml part is a worksheet (`Default`), so this part is the same however many sheets
// follow and can open the zip, where file-type sniffers look for it.
const CONTENT_TYPES =
  `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
  '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
  '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
  '</Types>';

const ROOT_RELS =
  `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="${REL_NS}/officeDocument" Target="xl/workbook.xml"/>` +
  '</Relationships>';

/** Sheet i is relationship rId{i}; the styles come after them. */
function workbookRels(sheets: number): string {
  let rels = `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`;
  for (let i = 1; i <= sheets; i++) rels += `<Relationship Id="rId${i}" Type="${REL_NS}/worksheet" Target="worksheets/sheet${i}.xml"/>`;
  return `${rels}<Relationship Id="rId${sheets + 1}" Type="${REL_NS}/styles" Target="styles.xml"/></Relationships>`;
}

// Cell styles: 0 default, 1 header (bold, text), 2 data (text). numFmtId 49 is the built-in `@`.
const STYLES =
  `${XML_HEAD}<styleSheet xmlns="${MAIN_NS}">` +
  '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>' +
  '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>' +
  '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
  '<cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
  '<xf numFmtId="49" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1" applyNumberFormat="1"/>' +
  '<xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>' +
  '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
  '</styleSheet>';

const HEADER_STYLE = 1;
const TEXT_STYLE = 2;
const BATCH_CHARS = 64 * 1024;

/** Excel's last row is 1,048,576: a header and this many data rows fit on one sheet. */
export const XLSX_MAX_DATA_ROWS = 1_048_575;

/** The sheets' names: `name`, then `name 2`, `name 3`... (at most 31 characters, as Excel allows). */
function sheetNames(name: string, sheets: number): string[] {
  return Array.from({ length: sheets }, (_, i) => (i === 0 ? name : `${name.slice(0, 25)} ${i + 1}`));
}

/** A sheet as the workbook part names it: its name and the range its autofilter covers. */
interface SheetInfo {
  readonly name: string;
  readonly filter: string;
}

function workbook(sheets: readonly SheetInfo[]): string {
  const list = sheets.map(({ name }, i) => `<sheet name="${escapeXml(name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('');
  // Excel keeps a sheet's autofilter range as this hidden name too; without it some versions
  // show the filter buttons but lose the range when the file is saved again.
  const names = sheets
    .map(
      ({ name, filter }, i) =>
        `<definedName name="_xlnm._FilterDatabase" localSheetId="${i}" hidden="1">${escapeXml(`'${name.replace(/'/g, "''")}'!${absolute(filter)}`)}</definedName>`,
    )
    .join('');
  return `${XML_HEAD}<workbook xmlns="${MAIN_NS}" xmlns:r="${REL_NS}"><sheets>${list}</sheets><definedNames>${names}</definedNames></workbook>`;
}

/** `A1:C9` as `$A$1:$C$9`. */
const absolute = (range: string): string => range.replace(/([A-Z]+)(\d+)/g, '$$$1$$$2');

// Characters XML 1.0 cannot carry at all (C0 controls but tab/LF/CR, U+FFFE/U+FFFF, lone surrogates).
const NOT_XML =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed here
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

// A carriage return is written as a character reference: an XML parser reads a literal one (or
// CR LF) in text as a line feed, a reference as itself.
const XML_SPECIAL = /[&<>"\r]/g;
const XML_REFERENCE: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\r': '&#13;' };

function escapeXml(text: string): string {
  return text.replace(NOT_XML, '').replace(XML_SPECIAL, (c) => XML_REFERENCE[c]!);
}

// OOXML reads `_xHHHH_` inside a string as the escaped character U+HHHH (ECMA-376 Part 1,
// 22.9.2.19 ST_Xstring), so a value that holds that text literally would show, say, a line
// break for `_x000D_`. Escaping its underscore as `_x005F_` makes Excel and LibreOffice show the
// text as written.
const OOXML_ESCAPE = /_(x[0-9A-Fa-f]{4}_)/g;

// Any character the steps below could change: a value without one is written as it is, and
// most values (names, dates, CPFs, field labels) have none, so most cells cost one test, not three
// replacements.
// eslint-disable-next-line no-control-regex -- the control characters NOT_XML removes, and CR
const MAY_CHANGE = /[\u0000-\u0008\u000b-\u001f&<>"_\ud800-\udfff\ufffe\uffff]/;

export function cellText(value: string): string {
  return MAY_CHANGE.test(value) ? escapedCellText(value) : value;
}

/** A cell's text with every step applied (what cellText returns for a value it must change). */
export function escapedCellText(value: string): string {
  return escapeXml(value).replace(OOXML_ESCAPE, '_x005F_$1');
}

function columnName(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

// Spreadsheet programs may trim or collapse a text's white space unless it is marked to be kept.
// Only text with white space other than single spaces between words needs the mark: leaving it
// off the rest makes the sheet a fifth smaller, and so cheaper to deflate.
const SPACE_TO_KEEP = /^\s|\s$|\s\s|[^\S ]/;

/** A cell's value: text (a text cell), or a number (a numeric cell, general format). */
export type XlsxCell = string | number;

function rowXml(number: number, values: readonly XlsxCell[], style: number, letters: readonly string[]): string {
  let xml = `<row r="${number}">`;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    // A finite number is a numeric cell (a count); anything else, NaN included, is text.
    if (typeof value === 'number' && Number.isFinite(value)) {
      xml += `<c r="${letters[i]}${number}"><v>${value}</v></c>`;
      continue;
    }
    const text = String(value);
    const t = SPACE_TO_KEEP.test(text) ? '<t xml:space="preserve">' : '<t>';
    xml += `<c r="${letters[i]}${number}" t="inlineStr" s="${style}"><is>${t}${cellText(text)}</t></is></c>`;
  }
  return `${xml}</row>`;
}

/** Rows read ahead to size a sheet's columns: the `<cols>` element comes before the data. */
const SIZING_ROWS = 500;
const MIN_WIDTH = 6;
const MAX_WIDTH = 60;

/** Each column's width in characters: its longest text among the header and the first rows, within bounds. */
function columnWidths(columns: readonly string[], rows: readonly XlsxRow[]): number[] {
  return columns.map((header, i) => {
    let longest = header.length;
    for (const row of rows) longest = Math.max(longest, String(row[i] ?? '').length);
    return Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, longest + 2));
  });
}

/** Row arrays as a workbook takes them: text cells, or numbers for numeric cells. */
type XlsxRow = readonly XlsxCell[];

async function* sheetXml(
  columns: readonly string[],
  rows: AsyncIterable<XlsxRow> | Iterable<XlsxRow>,
  /** Told the range the sheet's autofilter covers, once its last row is written. */
  filtered: (range: string) => void,
): AsyncGenerator<Buffer> {
  const letters = columns.map((_, i) => columnName(i));
  // Columns sized to their content (SPEC §3.5, session 4) from the rows read ahead; the rest stream.
  const source = (rows as AsyncIterable<XlsxRow>)[Symbol.asyncIterator]
    ? (rows as AsyncIterable<XlsxRow>)[Symbol.asyncIterator]()
    : (rows as Iterable<XlsxRow>)[Symbol.iterator]();
  const first: XlsxRow[] = [];
  let next = await source.next();
  while (!next.done && first.length < SIZING_ROWS) {
    first.push(next.value);
    next = await source.next();
  }
  const cols = columnWidths(columns, first)
    .map((width, i) => `<col min="${i + 1}" max="${i + 1}" width="${width}" customWidth="1"/>`)
    .join('');
  let batch =
    `${XML_HEAD}<worksheet xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">` +
    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>' +
    `<cols>${cols}</cols>` +
    '<sheetData>' +
    rowXml(1, columns, HEADER_STYLE, letters);
  let number = 1;
  const remaining = async function* () {
    yield* first;
    while (!next.done) {
      yield next.value;
      next = await source.next();
    }
  };
  for await (const row of remaining()) {
    batch += rowXml(++number, row, TEXT_STYLE, letters);
    if (batch.length >= BATCH_CHARS) {
      yield Buffer.from(batch);
      batch = '';
    }
  }
  // The autofilter over the header and every row (issue 50): it comes after the data in the
  // schema's order, so the streamed sheet knows its last row by then.
  const range = `A1:${letters[letters.length - 1] ?? 'A'}${number}`;
  filtered(range);
  yield Buffer.from(`${batch}</sheetData><autoFilter ref="${range}"/></worksheet>`);
}

export interface XlsxOptions {
  /** Data rows per sheet before the next sheet starts (default: as many as Excel shows). */
  readonly maxRowsPerSheet?: number;
}

/** One table of a workbook: its sheet's name, its header and its rows. */
export interface XlsxTable {
  readonly name: string;
  readonly columns: readonly string[];
  /** Text cells; a number is written as a numeric cell (summaries' counts only, SPEC §3.5). */
  readonly rows: AsyncIterable<readonly XlsxCell[]>;
}

/**
 * The workbook's bytes: `columns` as each sheet's bold, frozen header, then `rows`, continued on
 * further sheets (`name 2`, `name 3`...) past Excel's row limit. Rows are pulled as the bytes are
 * read, so memory stays bounded however many there are.
 */
export function xlsxChunks(
  sheetName: string,
  columns: readonly string[],
  rows: AsyncIterable<readonly string[]>,
  options: XlsxOptions = {},
): AsyncGenerator<Buffer> {
  return xlsxBookChunks([{ name: sheetName, columns, rows }], options);
}

/** Several tables, one after the other, each on its sheets (a batch's divergences, then its `Falhas`). */
export function xlsxBookChunks(tables: readonly XlsxTable[], options: XlsxOptions = {}): AsyncGenerator<Buffer> {
  return zipArchive(workbookParts(tables, options));
}

export function xlsxBookStream(tables: readonly XlsxTable[], options: XlsxOptions = {}): Readable {
  return Readable.from(xlsxBookChunks(tables, options), { objectMode: false });
}

/** The same bytes as a stream (an HTTP answer). */
export function xlsxStream(
  sheetName: string,
  columns: readonly string[],
  rows: AsyncIterable<readonly string[]>,
  options: XlsxOptions = {},
): Readable {
  return Readable.from(xlsxChunks(sheetName, columns, rows, options), { objectMode: false });
}

async function* workbookParts(tables: readonly XlsxTable[], options: XlsxOptions): AsyncGenerator<ZipPart> {
  const perSheet = Math.max(1, options.maxRowsPerSheet ?? XLSX_MAX_DATA_ROWS);
  const sources = tables.map((table) => table.rows[Symbol.asyncIterator]());
  try {
    // [Content_Types].xml first: file-type sniffers look for it at the start of the zip.
    yield { name: '[Content_Types].xml', data: Buffer.from(CONTENT_TYPES) };
    yield { name: '_rels/.rels', data: Buffer.from(ROOT_RELS) };
    yield { name: 'xl/styles.xml', data: Buffer.from(STYLES) };
    const names: string[] = [];
    const filters: string[] = [];
    for (const [t, table] of tables.entries()) {
      const source = sources[t]!;
      // The row after a sheet's last one, read ahead: a last full sheet gets no empty follower.
      const ahead: { row: IteratorResult<XlsxRow> | null } = { row: null };
      const sheetRows = async function* (): AsyncGenerator<XlsxRow> {
        for (let taken = 0; taken < perSheet; taken++) {
          const row = ahead.row ?? (await source.next());
          ahead.row = null;
          if (row.done) return;
          yield row.value;
        }
        ahead.row = await source.next();
      };
      let sheets = 0;
      do {
        sheets++;
        // The archive reads a sheet to its end before it asks for the next part.
        yield {
          name: `xl/worksheets/sheet${names.length + sheets}.xml`,
          data: sheetXml(table.columns, sheetRows(), (range) => filters.push(range)),
        };
      } while (ahead.row !== null && !ahead.row.done);
      names.push(...sheetNames(table.name, sheets));
    }
    yield { name: 'xl/workbook.xml', data: Buffer.from(workbook(names.map((name, i) => ({ name, filter: filters[i]! })))) };
    yield { name: 'xl/_rels/workbook.xml.rels', data: Buffer.from(workbookRels(names.length)) };
  } finally {
    // A reader gone or an error ends the rows too (a no-op once they are all read).
    await Promise.all(sources.map((source) => Promise.resolve(source.return?.()).catch(() => undefined)));
  }
}

/** Writes the workbook of `xlsxBookChunks` to `path`; returns its size. */
export async function writeXlsxBook(path: string, tables: readonly XlsxTable[]): Promise<{ bytes: number }> {
  const out = new ResultFile(path);
  try {
    for await (const chunk of xlsxBookChunks(tables)) out.addBytes(chunk);
    out.flush();
    return { bytes: out.position() };
  } finally {
    out.close();
  }
}

/** Writes the workbook of `xlsxChunks` to `path` (a job's result file); returns its size. */
export async function writeXlsx(
  path: string,
  sheetName: string,
  columns: readonly string[],
  rows: AsyncIterable<readonly string[]>,
  signal?: AbortSignal,
): Promise<{ bytes: number }> {
  const out = new ResultFile(path);
  try {
    for await (const chunk of xlsxChunks(sheetName, columns, rows)) {
      signal?.throwIfAborted();
      out.addBytes(chunk);
    }
    out.flush();
    return { bytes: out.position() };
  } finally {
    out.close();
  }
}
