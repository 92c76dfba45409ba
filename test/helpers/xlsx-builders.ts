// Builders for return files in odd layouts: hand-made SpreadsheetML parts zipped with yazl, so
// tests control every byte a real-world writer might produce (prefixes, missing parts, no `r`).
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import yazl from 'yazl';
import { readRetorno, type RetornoRow } from '@censo/shared';
import { atFileEnd } from './file-end.js';

// A folder per test process (vitest runs two at a time), emptied when each file's tests end: the
// files that use these builders write thousands of returns, ~80 MB a run.
const DIR = join(tmpdir(), 'censo-retorno-tests', randomUUID());
const removeDir = () => rm(DIR, { recursive: true, force: true });

export async function tempPath(ext: string): Promise<string> {
  atFileEnd(removeDir);
  await mkdir(DIR, { recursive: true });
  return join(DIR, `${randomUUID()}.${ext}`);
}

export async function writeTemp(ext: string, content: string | Buffer): Promise<string> {
  const path = await tempPath(ext);
  await writeFile(path, content);
  return path;
}

export async function readRows(path: string, format: 'json' | 'xlsx'): Promise<RetornoRow[]> {
  const rows: RetornoRow[] = [];
  for await (const row of readRetorno({ path, format })) rows.push(row);
  return rows;
}

/** The error readRetorno throws, or fails the test when it reads the file. */
export async function readError(path: string, format: 'json' | 'xlsx'): Promise<Error> {
  try {
    await readRows(path, format);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`expected ${path} to be unreadable`);
}

export type Part = string | Buffer | (() => Readable);

/** Zips the given parts (name → content, or a stream factory) into a temp .xlsx file. */
export async function zipParts(parts: Record<string, Part>, options: { compress?: boolean } = {}): Promise<string> {
  const path = await tempPath('xlsx');
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(parts)) {
    if (typeof content === 'function') zip.addReadStream(content(), name, { compress: options.compress ?? true });
    else zip.addBuffer(Buffer.from(content), name, { compress: options.compress ?? true });
  }
  zip.end();
  const out = createWriteStream(path);
  zip.outputStream.pipe(out);
  await finished(out);
  return path;
}

const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

export interface SheetSpec {
  readonly name?: string;
  /** The `<sheetData>` content (rows), written as is. */
  readonly rows: string;
  /** Relationship target; default `worksheets/sheetN.xml`. */
  readonly target?: string;
}

export interface WorkbookSpec {
  readonly sheets: readonly SheetSpec[];
  readonly sharedStrings?: readonly string[] | string;
  /** A whole styles.xml, or omitted (no styles part). */
  readonly styles?: string;
  readonly date1904?: boolean;
  /** Element prefix for every SpreadsheetML element (`x` → `<x:row>`). */
  readonly prefix?: string;
  readonly extraParts?: Record<string, Part>;
}

/** A minimal but valid workbook: workbook.xml, its rels, the sheets and optional parts. */
export function workbookParts(spec: WorkbookSpec): Record<string, Part> {
  const p = spec.prefix ? `${spec.prefix}:` : '';
  const ns = spec.prefix ? `xmlns:${spec.prefix}="${MAIN}"` : `xmlns="${MAIN}"`;
  const parts: Record<string, Part> = {};
  const rels: string[] = [];
  const sheets: string[] = [];
  spec.sheets.forEach((sheet, i) => {
    const target = sheet.target ?? `worksheets/sheet${i + 1}.xml`;
    rels.push(`<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="${target}"/>`);
    sheets.push(`<${p}sheet name="${sheet.name ?? `Plan${i + 1}`}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`);
    const part = target.startsWith('/') ? target.slice(1) : `xl/${target}`;
    parts[part] =
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<${p}worksheet ${ns} xmlns:r="${REL}"><${p}sheetData>${sheet.rows}</${p}sheetData></${p}worksheet>`;
  });
  if (spec.sharedStrings !== undefined) {
    rels.push(`<Relationship Id="rIdS" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/>`);
    parts['xl/sharedStrings.xml'] =
      typeof spec.sharedStrings === 'string'
        ? spec.sharedStrings
        : `<?xml version="1.0" encoding="UTF-8"?><${p}sst ${ns}>${spec.sharedStrings.map((s) => `<${p}si><${p}t xml:space="preserve">${xmlEscape(s)}</${p}t></${p}si>`).join('')}</${p}sst>`;
  }
  if (spec.styles !== undefined) {
    rels.push(`<Relationship Id="rIdY" Type="${REL}/styles" Target="styles.xml"/>`);
    parts['xl/styles.xml'] = spec.styles;
  }
  parts['[Content_Types].xml'] =
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>';
  parts['xl/workbook.xml'] =
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<${p}workbook ${ns} xmlns:r="${REL}">` +
    (spec.date1904 ? `<${p}workbookPr date1904="1"/>` : '') +
    `<${p}sheets>${sheets.join('')}</${p}sheets></${p}workbook>`;
  parts['xl/_rels/workbook.xml.rels'] =
    `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels.join('')}</Relationships>`;
  return { ...parts, ...spec.extraParts };
}

export function buildXlsx(spec: WorkbookSpec): Promise<string> {
  return zipParts(workbookParts(spec));
}

export function xmlEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** An inline-string cell. */
export function is(ref: string, text: string): string {
  return `<c r="${ref}" t="inlineStr"><is><t>${xmlEscape(text)}</t></is></c>`;
}

/** A numeric cell, optionally styled. */
export function num(ref: string, value: string | number, style?: number): string {
  return `<c r="${ref}"${style === undefined ? '' : ` s="${style}"`}><v>${value}</v></c>`;
}

export function row(r: number | undefined, ...cells: string[]): string {
  return `<row${r === undefined ? '' : ` r="${r}"`}>${cells.join('')}</row>`;
}

export const HEADER = ['Registro', 'Linha', 'Código na Escola', 'Campo', 'Mensagem', 'Conteúdo'] as const;

/** A row of inline strings from column A. */
export function textRow(r: number, values: readonly string[]): string {
  return row(r, ...values.map((v, i) => is(`${String.fromCharCode(65 + i)}${r}`, v)));
}

/** styles.xml with the given cellXfs number formats and custom formats. */
export function stylesXml(xfNumFmtIds: readonly number[], customFormats: Record<number, string> = {}): string {
  const fmts = Object.entries(customFormats);
  return (
    `<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="${MAIN}">` +
    (fmts.length
      ? `<numFmts count="${fmts.length}">${fmts.map(([id, code]) => `<numFmt numFmtId="${id}" formatCode="${xmlEscape(code)}"/>`).join('')}</numFmts>`
      : '') +
    `<cellStyleXfs count="1"><xf numFmtId="14"/></cellStyleXfs>` +
    `<cellXfs count="${xfNumFmtIds.length}">${xfNumFmtIds.map((id) => `<xf numFmtId="${id}" fontId="0" fillId="0" borderId="0" xfId="0"/>`).join('')}</cellXfs>` +
    `</styleSheet>`
  );
}
