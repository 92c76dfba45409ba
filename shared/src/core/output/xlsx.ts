// A streaming xlsx writer for the spreadsheet answers (SPEC §3.5): one sheet, the header row bold
// and frozen, every cell an inline string styled as text (`@`), so a CPF keeps its leading zeros
// in any spreadsheet program. The sheet XML is produced row by row into the zip (yazl), so
// 150,000 rows never become one string.
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';

const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const MAIN_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

const CONTENT_TYPES =
  `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
  '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
  '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
  '</Types>';

const ROOT_RELS =
  `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="${REL_NS}/officeDocument" Target="xl/workbook.xml"/>` +
  '</Relationships>';

const WORKBOOK_RELS =
  `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="${REL_NS}/worksheet" Target="worksheets/sheet1.xml"/>` +
  `<Relationship Id="rId2" Type="${REL_NS}/styles" Target="styles.xml"/>` +
  '</Relationships>';

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

function workbook(sheetName: string): string {
  return (
    `${XML_HEAD}<workbook xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">` +
    `<sheets><sheet name="${escapeXml(sheetName)}" sheetId="1" r:id="rId1"/></sheets></workbook>`
  );
}

// Characters XML 1.0 cannot carry at all (C0 controls but tab/LF/CR, U+FFFE/U+FFFF, lone surrogates).
const NOT_XML =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed here
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function escapeXml(text: string): string {
  return text.replace(NOT_XML, '').replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

function columnName(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

function rowXml(number: number, values: readonly string[], style: number, letters: readonly string[]): string {
  let xml = `<row r="${number}">`;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    xml += `<c r="${letters[i]}${number}" t="inlineStr" s="${style}"><is><t xml:space="preserve">${escapeXml(value)}</t></is></c>`;
  }
  return `${xml}</row>`;
}

async function* sheetXml(columns: readonly string[], rows: AsyncIterable<readonly string[]>): AsyncGenerator<Buffer> {
  const letters = columns.map((_, i) => columnName(i));
  let batch =
    `${XML_HEAD}<worksheet xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">` +
    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>' +
    '<sheetData>' +
    rowXml(1, columns, HEADER_STYLE, letters);
  let number = 1;
  for await (const row of rows) {
    batch += rowXml(++number, row, TEXT_STYLE, letters);
    if (batch.length >= BATCH_CHARS) {
      yield Buffer.from(batch);
      batch = '';
    }
  }
  yield Buffer.from(`${batch}</sheetData></worksheet>`);
}

/** Writes one sheet named `sheetName`: `columns` as its bold, frozen header, then `rows`. */
export async function writeXlsx(
  path: string,
  sheetName: string,
  columns: readonly string[],
  rows: AsyncIterable<readonly string[]>,
  signal?: AbortSignal,
): Promise<{ bytes: number }> {
  const zip = new yazl.ZipFile();
  const mtime = new Date();
  const small = (name: string, text: string) => zip.addBuffer(Buffer.from(text), name, { mtime });
  small('[Content_Types].xml', CONTENT_TYPES);
  small('_rels/.rels', ROOT_RELS);
  small('xl/workbook.xml', workbook(sheetName));
  small('xl/_rels/workbook.xml.rels', WORKBOOK_RELS);
  small('xl/styles.xml', STYLES);
  const sheet = Readable.from(sheetXml(columns, rows));
  zip.addReadStream(sheet, 'xl/worksheets/sheet1.xml', { mtime });
  zip.end();
  // An error while producing rows (a bad file) must fail the write, not leave the zip waiting.
  const output = zip.outputStream as unknown as Readable;
  sheet.once('error', (err) => output.destroy(err));
  const out = createWriteStream(path, { mode: 0o600 });
  await pipeline(output, out, ...(signal ? [{ signal }] : []));
  return { bytes: out.bytesWritten };
}
