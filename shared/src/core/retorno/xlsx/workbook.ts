// The workbook-level parts: sheet order and date system (workbook.xml), where each sheet lives
// (its .rels), which styles are dates (styles.xml) and the shared string table. Writers differ:
// styles.xml and sharedStrings.xml may be missing, targets may be absolute or relative.
import { posix } from 'node:path';
import { badInput } from '../../errors.js';
import { isBuiltinDateFormat, isDateFormatCode, type CellContext } from './cells.js';
import { SharedStrings } from './strings.js';
import { appendCapped, cellString, decodeEntities, TagScanner, type FastPath, type TagHandler } from './xml.js';
import type { ZipArchive } from './zip.js';

export const NOT_A_WORKBOOK = 'o zip não contém uma pasta de trabalho do Excel (xl/workbook.xml).';

export interface Workbook extends CellContext {
  /** Worksheet part names, in the workbook's sheet order. */
  readonly sheets: readonly string[];
  /** The sheets' names as the workbook shows them, in the same order. */
  readonly sheetNames: readonly string[];
}

interface Relationship {
  readonly id: string;
  readonly type: string;
  readonly target: string;
  readonly external: boolean;
}

export async function readWorkbook(zip: ZipArchive, signal?: AbortSignal): Promise<Workbook> {
  const workbookPart = await findWorkbookPart(zip, signal);
  const relsPart = relsPartOf(workbookPart);
  zip.assertBudget([workbookPart, relsPart]);
  const book = await scan(zip, workbookPart, new WorkbookHandler(), signal);
  const rels = (await scan(zip, relsPart, new RelsHandler(), signal)).rels;
  const dir = posix.dirname(workbookPart);
  const byId = new Map(rels.map((rel) => [rel.id, rel]));

  const sheets: string[] = [];
  const sheetNames: string[] = [];
  for (const [i, id] of book.sheetRelIds.entries()) {
    const rel = byId.get(id);
    if (!rel || rel.external) continue;
    sheetNames.push(book.sheetNames[i] ?? '');
    const part = resolveTarget(dir, rel.target);
    if (part === undefined || !zip.has(part)) {
      throw badInput.unreadableRetorno('uma planilha listada na pasta de trabalho não está no arquivo.');
    }
    sheets.push(part);
  }
  const stylesPart = partOfType(rels, 'styles', dir) ?? `${dir}/styles.xml`;
  const stringsPart = partOfType(rels, 'sharedStrings', dir) ?? `${dir}/sharedStrings.xml`;
  // Refuse a bomb from the declared sizes before inflating anything big; the streaming count in
  // ZipArchive still guards every byte actually read.
  zip.assertBudget([stylesPart, stringsPart, ...sheets]);

  const styles = await scan(zip, stylesPart, new StylesHandler(), signal);
  const strings = await scan(zip, stringsPart, new SharedStringsHandler(), signal);
  strings.strings.finish();
  return {
    sheets,
    sheetNames,
    date1904: book.date1904,
    dateStyles: styles.dateStyles(),
    sharedStrings: strings.strings,
  };
}

async function scan<T extends TagHandler>(zip: ZipArchive, part: string, handler: T, signal?: AbortSignal): Promise<T> {
  const scanner = new TagScanner(handler);
  for await (const chunk of zip.text(part, signal)) {
    scanner.feed(chunk);
    if (scanner.done) break;
  }
  scanner.end();
  return handler;
}

/** `xl/workbook.xml`, or wherever the package's root relationships say the workbook is. */
async function findWorkbookPart(zip: ZipArchive, signal?: AbortSignal): Promise<string> {
  if (zip.has('xl/workbook.xml')) return 'xl/workbook.xml';
  if (zip.has('_rels/.rels')) {
    zip.assertBudget(['_rels/.rels']);
    const rels = (await scan(zip, '_rels/.rels', new RelsHandler(), signal)).rels;
    const part = partOfType(rels, 'officeDocument', '');
    if (part !== undefined && zip.has(part)) return part;
  }
  throw badInput.unreadableRetorno(NOT_A_WORKBOOK);
}

function relsPartOf(part: string): string {
  const dir = posix.dirname(part);
  return `${dir === '.' ? '' : `${dir}/`}_rels/${posix.basename(part)}.rels`;
}

function partOfType(rels: readonly Relationship[], type: string, dir: string): string | undefined {
  const rel = rels.find((r) => !r.external && r.type.endsWith(`/${type}`));
  return rel ? resolveTarget(dir, rel.target) : undefined;
}

/** Zip entry name of a relationship target: absolute (`/xl/...`) or relative to `dir`. */
export function resolveTarget(dir: string, target: string): string | undefined {
  let decoded = target.replace(/\\/g, '/');
  try {
    decoded = decodeURIComponent(decoded);
  } catch {
    // Not percent-encoded after all: use it as written.
  }
  const joined = decoded.startsWith('/') ? decoded.slice(1) : posix.join(dir, decoded);
  const part = posix.normalize(joined);
  return part.startsWith('../') || part === '..' ? undefined : part;
}

class WorkbookHandler implements TagHandler {
  readonly sheetRelIds: string[] = [];
  readonly sheetNames: string[] = [];
  date1904 = false;

  open(name: string, _selfClosing: boolean, xml: TagScanner): void {
    if (name === 'sheet') {
      const id = xml.attr('id');
      if (id !== undefined) {
        this.sheetRelIds.push(id);
        this.sheetNames.push((xml.attr('name') ?? '').slice(0, 100));
      }
    } else if (name === 'workbookPr') {
      const value = xml.attr('date1904')?.toLowerCase();
      this.date1904 = value === '1' || value === 'true';
    }
  }

  close(name: string, xml: TagScanner): void {
    if (name === 'sheets') xml.done = true;
  }

  text(): void {}
}

class RelsHandler implements TagHandler {
  readonly rels: Relationship[] = [];

  open(name: string, _selfClosing: boolean, xml: TagScanner): void {
    if (name !== 'Relationship') return;
    const id = xml.attr('Id');
    const target = xml.attr('Target');
    if (id === undefined || target === undefined) return;
    this.rels.push({
      id,
      target,
      type: xml.attr('Type') ?? '',
      external: xml.attr('TargetMode')?.toLowerCase() === 'external',
    });
  }

  close(): void {}

  text(): void {}
}

class StylesHandler implements TagHandler {
  private readonly customFormats = new Map<number, string>();
  private readonly xfFormats: number[] = [];
  private inCellXfs = false;

  dateStyles(): boolean[] {
    return this.xfFormats.map((id) => {
      const code = this.customFormats.get(id);
      return code !== undefined ? isDateFormatCode(code) : isBuiltinDateFormat(id);
    });
  }

  open(name: string, selfClosing: boolean, xml: TagScanner): void {
    if (name === 'numFmt') {
      const id = Number(xml.attr('numFmtId'));
      const code = xml.attr('formatCode');
      if (Number.isInteger(id) && code !== undefined) this.customFormats.set(id, code);
    } else if (name === 'cellXfs') {
      this.inCellXfs = !selfClosing;
    } else if (name === 'xf' && this.inCellXfs) {
      const id = Number(xml.attr('numFmtId') ?? '0');
      this.xfFormats.push(Number.isInteger(id) ? id : 0);
    }
  }

  close(name: string): void {
    if (name === 'cellXfs') this.inCellXfs = false;
  }

  text(): void {}
}

const PLAIN_ITEM = '<si><t>';
const PRESERVED_ITEM = '<si><t xml:space="preserve">';
const ITEM_END = '</t></si>';
/** Longest item text the fast path takes; longer ones go tag by tag (and their limit checks). */
const FAST_ITEM_CHARS = 32_767;

/** `<si>` items: plain `<t>` or rich-text runs `<r><t>` concatenated; phonetic `<rPh>` ignored. */
class SharedStringsHandler implements TagHandler, FastPath {
  readonly strings = new SharedStrings();
  private current = '';
  private inItem = false;
  private inPhonetic = false;

  /**
   * Items of one plain text, `<si><t>text</t></si>` (or `<t xml:space="preserve">`), the form
   * of nearly every item, pushed with the same effect as the tag-by-tag calls; anything else
   * (rich text, phonetic runs, CDATA, prefixes, an item cut by the chunk's end) is left to the
   * scanner.
   */
  scan(buf: string, pos: number): number {
    if (this.inPhonetic) return pos;
    const n = buf.length;
    for (;;) {
      const lt = buf.charCodeAt(pos) === 60 ? pos : buf.indexOf('<', pos);
      if (lt === -1) return n;
      let start: number;
      if (buf.startsWith(PLAIN_ITEM, lt)) start = lt + PLAIN_ITEM.length;
      else if (buf.startsWith(PRESERVED_ITEM, lt)) start = lt + PRESERVED_ITEM.length;
      else return lt;
      const end = buf.indexOf('<', start);
      if (end === -1 || end - start > FAST_ITEM_CHARS || !buf.startsWith(ITEM_END, end)) return lt;
      const raw = buf.slice(start, end);
      this.strings.push(cellString(raw.indexOf('&') === -1 ? raw : decodeEntities(raw)));
      this.inItem = false;
      pos = end + ITEM_END.length;
      if (pos >= n) return n;
    }
  }

  open(name: string, selfClosing: boolean, xml: TagScanner): void {
    if (name === 'sst') {
      xml.fast = this;
    } else if (name === 'si') {
      if (selfClosing) this.strings.push('');
      else {
        this.inItem = true;
        this.current = '';
      }
    } else if (name === 't') {
      xml.collecting = this.inItem && !this.inPhonetic && !selfClosing;
    } else if (name === 'rPh') {
      this.inPhonetic = !selfClosing;
    }
  }

  close(name: string, xml: TagScanner): void {
    if (name === 't') xml.collecting = false;
    else if (name === 'rPh') this.inPhonetic = false;
    else if (name === 'si' && this.inItem) {
      this.strings.push(cellString(this.current));
      this.inItem = false;
    }
  }

  text(text: string): void {
    this.current = appendCapped(this.current, text);
  }
}
