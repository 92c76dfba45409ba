// One worksheet, scanned as a stream: find the header among the first 20 rows, then turn each
// data row into a RetornoRow, keeping only the mapped columns' values so rows with thousands of
// columns or huge unmapped cells cost nothing but scanning.
import type { RetornoRow } from '../../types.js';
import {
  BUILTIN_COLUMN_NAMES,
  betterCandidate,
  CANDIDATE_TEXTS,
  hasColumnNameShape,
  hasRequiredRoles,
  isBlank,
  ROLES,
  type ColumnNames,
  type HeaderCandidate,
  type Role,
} from '../columns.js';
import { badInput } from '../../errors.js';
import { codigoInepDoTitulo } from '../escola.js';
import { BAD_SHARED_STRING, cellText, type CellContext } from './cells.js';
import { appendCapped, decodeEntities, TagScanner, type FastPath, type TagHandler } from './xml.js';

/** SPEC §1.2: the header is looked for among sheet rows 1–20. */
const HEADER_ROWS = 20;

const enum Slot {
  Registro = 0,
  Linha = 1,
  Codigo = 2,
  Campo = 3,
  Mensagem = 4,
  Conteudo = 5,
}

const CELL_ATTRS = ['r', 't', 's'] as const;
const ROW_ATTRS = ['r'] as const;

const NOT_KEPT = -1;
/**
 * Longest `<v>` text the fast path takes: far below the raw-value cap, so it never has to
 * raise CELL_TOO_LONG itself (the tag-by-tag path does, for the rare longer values).
 */
const FAST_VALUE_CHARS = 4096;
// While looking for the header every cell is read, to test its name.
const PROBE = -2;
/** A title row's text kept to find a school's code in (issue 54): a title is short. */
const TITLE_CHARS = 500;

export class SheetScanner implements TagHandler, FastPath {
  private readonly xml = new TagScanner(this);
  /** Rows ready for the caller; drained with take(). */
  private out: RetornoRow[] = [];
  /** Whether a header row was found (the sheet is usable). */
  hasHeader = false;
  /** Whether any row held a non-empty cell (a sheet of only title rows still counts). */
  hasContent = false;

  // Header: column index of each role (-1 when absent), in ROLES order.
  private readonly columnOf: number[] = [-1, -1, -1, -1, -1, -1];
  private mappedColumns: number[] = [];
  private mappedSlots: number[] = [];

  // Current row.
  private rowNumber = 0;
  private rowValues: (string | null)[] = [null, null, null, null, null, null];
  private probeRoles = new Map<Role, number>();
  /** Every non-empty cell of the row being probed plays a role or has a column name's shape. */
  private probeHeaderLike = true;
  private rowHasContent = false;

  // Current cell.
  private inCell = false;
  private column = -1;
  private slot = NOT_KEPT;
  private type: string | undefined;
  private style = 0;
  private value = '';
  private inline: string | null = null;
  private inInline = false;
  private inPhonetic = false;
  private inSheetData = false;
  private readonly starts = new Int32Array(3);
  private readonly ends = new Int32Array(3);
  private readonly rowStarts = new Int32Array(1);
  private readonly rowEnds = new Int32Array(1);
  /** fastAttrs() bounds of r, t and s. */
  private readonly spans = new Int32Array(6);

  /** The best header candidate seen in rows 1–20, for the error when none qualifies. */
  candidate: HeaderCandidate | null = null;
  private probeTexts: string[] = [];
  /** The probed row's cells joined by spaces, up to TITLE_CHARS: a title row may name the school. */
  private probeLine = '';
  /** The INEP code a title row above the header gave (escola.ts); null when none did. */
  escola: string | null = null;

  constructor(
    private readonly ctx: CellContext,
    private readonly names: ColumnNames = BUILTIN_COLUMN_NAMES,
  ) {}

  /** Whether the rest of the sheet can be skipped (its end, or no header in rows 1–20). */
  get done(): boolean {
    return this.xml.done;
  }

  feed(chunk: string, ascii: Uint8Array | null = null): void {
    this.xml.feed(chunk, ascii);
  }

  end(): void {
    this.xml.end();
  }

  take(): RetornoRow[] {
    const rows = this.out;
    this.out = [];
    return rows;
  }

  open(name: string, selfClosing: boolean): void {
    switch (name) {
      case 'c':
        if (this.inSheetData) this.openCell(selfClosing);
        break;
      case 'v':
        if (this.inCell && this.slot !== NOT_KEPT && !selfClosing) this.xml.collecting = true;
        break;
      case 't':
        if (this.inInline && !this.inPhonetic && !selfClosing) {
          this.xml.collecting = true;
          if (this.inline === null) this.inline = '';
        }
        break;
      case 'is':
        if (this.inCell && this.slot !== NOT_KEPT && !selfClosing) {
          this.inInline = true;
          if (this.inline === null) this.inline = '';
        }
        break;
      case 'rPh':
        if (this.inInline) this.inPhonetic = !selfClosing;
        break;
      case 'row':
        if (this.inSheetData) this.openRow(selfClosing);
        break;
      case 'sheetData':
        this.inSheetData = !selfClosing;
        if (selfClosing) this.xml.done = true;
        break;
    }
  }

  close(name: string): void {
    switch (name) {
      case 'v':
      case 't':
        this.xml.collecting = false;
        break;
      case 'c':
        if (this.inCell) this.closeCell();
        break;
      case 'is':
        this.inInline = false;
        break;
      case 'rPh':
        this.inPhonetic = false;
        break;
      case 'row':
        if (this.inSheetData) this.closeRow();
        break;
      case 'sheetData':
        this.inSheetData = false;
        this.xml.done = true;
        break;
    }
  }

  text(text: string): void {
    if (this.inInline) this.inline = appendCapped(this.inline ?? '', text);
    else this.value = appendCapped(this.value, text);
  }

  private openRow(selfClosing: boolean): void {
    const xml = this.xml;
    xml.attrSpans(ROW_ATTRS, this.rowStarts, this.rowEnds);
    this.startRow(numberAttr(xml, this.rowStarts[0]!, this.rowEnds[0]!), selfClosing);
  }

  /** A row opens, with its `r` attribute as a number (NaN when absent). */
  private startRow(n: number, selfClosing: boolean): void {
    this.rowNumber = Number.isInteger(n) && n > 0 ? n : this.rowNumber + 1;
    this.column = -1;
    this.rowHasContent = false;
    if (this.hasHeader) {
      const values = this.rowValues;
      for (let i = 0; i < 6; i++) values[i] = null;
    } else {
      this.probeRoles.clear();
      this.probeTexts = [];
      this.probeHeaderLike = true;
      this.probeLine = '';
    }
    if (selfClosing) this.closeRow();
  }

  private closeRow(): void {
    if (this.hasHeader) {
      this.emitRow();
      return;
    }
    if (this.rowHasContent) this.hasContent = true;
    if (this.rowHasContent && this.rowNumber <= HEADER_ROWS) {
      this.candidate = betterCandidate(this.candidate, {
        texts: this.probeTexts,
        roles: new Set(this.probeRoles.keys()),
        headerLike: this.probeHeaderLike,
      });
    }
    if (this.rowNumber <= HEADER_ROWS && hasRequiredRoles(this.probeRoles)) {
      this.useHeader(this.probeRoles);
      return;
    }
    // A title row: only above the header, so a data cell never names the school.
    if (this.rowNumber <= HEADER_ROWS && this.escola === null && this.probeLine !== '') this.escola = codigoInepDoTitulo(this.probeLine);
    if (this.rowNumber >= HEADER_ROWS) {
      this.xml.done = true; // no header in rows 1–20: the sheet is skipped
    }
  }

  private useHeader(roles: Map<Role, number>): void {
    this.hasHeader = true;
    // Data rows: cells and row ends go through scan() from here on.
    this.xml.fast = this;
    ROLES.forEach((role, slot) => {
      const column = roles.get(role);
      if (column === undefined) return;
      this.columnOf[slot] = column;
      this.mappedColumns.push(column);
      this.mappedSlots.push(slot);
    });
  }

  private emitRow(): void {
    const v = this.rowValues;
    if (isBlank(v)) return;
    const has = this.columnOf;
    this.out.push({
      registro: has[Slot.Registro]! < 0 ? null : (v[Slot.Registro] ?? ''),
      linha: has[Slot.Linha]! < 0 ? null : (v[Slot.Linha] ?? ''),
      codigo: v[Slot.Codigo] ?? '',
      campo: v[Slot.Campo] ?? '',
      mensagem: v[Slot.Mensagem] ?? '',
      conteudo: v[Slot.Conteudo] ?? '',
    });
  }

  /**
   * Data rows' cells in their usual form, `<c r="C7" t="s" s="3"><v>42</v></c>` (any other
   * attributes, in any order, single spaces between them, no entities) or self-closing, and
   * row tags in the same form, each with the same effect as the tag-by-tag path: a shared
   * string index is read without building the value's string. It reads the chunk's bytes,
   * about twice as fast as characters, so it only runs on ASCII chunks (a sheet of shared
   * strings is all ASCII); elsewhere, and for anything else (and a tag cut by the chunk's end),
   * the scanner goes on tag by tag.
   */
  scan(buf: string, pos: number, b: Uint8Array | null): number {
    if (b === null || this.inCell) return pos;
    const n = b.length;
    for (;;) {
      // Cells usually follow each other directly: look before searching.
      const lt = b[pos] === 60 ? pos : buf.indexOf('<', pos);
      // Text between tags outside a value is ignored, as the scanner would.
      if (lt === -1) return n;
      if (lt + 5 >= n) return lt;
      const c1 = b[lt + 1]!;
      if (c1 === 99 /* c */) {
        const next = this.fastCell(buf, b, lt, n);
        if (next < 0) return lt;
        pos = next;
      } else if (c1 === 47 /* / */) {
        if (b[lt + 2] !== 114 /* r */ || b[lt + 3] !== 111 /* o */ || b[lt + 4] !== 119 /* w */ || b[lt + 5] !== 62 /* > */) return lt;
        if (this.inSheetData) this.closeRow();
        pos = lt + 6;
      } else if (c1 === 114 /* r */) {
        if (b[lt + 2] !== 111 /* o */ || b[lt + 3] !== 119 /* w */) return lt;
        const spans = this.spans;
        const end = fastAttrs(b, lt + 4, n, spans);
        if (end < 0) return lt;
        if (this.inSheetData) {
          const r = spans[0]!;
          this.startRow(r < 0 ? NaN : digitsNumber(buf, b, r, spans[1]!), b[end - 2] === 47);
        }
        pos = end;
      } else {
        return lt;
      }
      if (pos >= n) return n;
    }
  }

  /** One cell from `<c` at `lt`; its end, or -1 (nothing changed) when it is not in the usual form. */
  private fastCell(buf: string, b: Uint8Array, lt: number, n: number): number {
    const spans = this.spans;
    let i = fastAttrs(b, lt + 2, n, spans);
    if (i < 0) return -1;
    const selfClosing = b[i - 2] === 47;
    let valueStart = -1;
    let valueEnd = -1;
    // The value's digits, read on the way (a shared string index needs no string); -1 if not.
    let digits = -1;
    if (!selfClosing) {
      // `<v>text</v></c>`: the form plainValue() takes, checked whole before anything changes.
      if (i + 2 >= n || b[i] !== 60 || b[i + 1] !== 118 || b[i + 2] !== 62) return -1;
      valueStart = i + 3;
      let k = valueStart;
      let d = 0;
      for (; k < n && k - valueStart <= 9; k++) {
        const c = b[k]! - 48;
        if (c < 0 || c > 9) break;
        d = d * 10 + c;
      }
      const digitsEnd = k;
      while (k < n && b[k] !== 60 && k - valueStart <= FAST_VALUE_CHARS) k++;
      valueEnd = k;
      // A shared string index: 1–9 digits and nothing else.
      if (digitsEnd === valueEnd && valueEnd > valueStart && valueEnd - valueStart <= 9) digits = d;
      if (
        valueEnd - valueStart > FAST_VALUE_CHARS ||
        valueEnd + 7 >= n ||
        b[valueEnd + 1] !== 47 /* / */ ||
        b[valueEnd + 2] !== 118 /* v */ ||
        b[valueEnd + 3] !== 62 /* > */ ||
        b[valueEnd + 4] !== 60 /* < */ ||
        b[valueEnd + 5] !== 47 /* / */ ||
        b[valueEnd + 6] !== 99 /* c */ ||
        b[valueEnd + 7] !== 62 /* > */
      ) {
        return -1;
      }
      i = valueEnd + 8;
    }
    const column = spans[0]! < 0 ? -1 : letterColumn(b, spans[0]!, spans[1]!);
    this.column = column >= 0 ? column : this.column + 1;
    if (selfClosing) return i;
    const mapped = this.mappedColumns;
    let slot = NOT_KEPT;
    for (let k = 0; k < mapped.length; k++) {
      if (mapped[k] === this.column) {
        slot = this.mappedSlots[k]!;
        break;
      }
    }
    if (slot === NOT_KEPT) return i;
    const type = typeOf(buf, b, spans[2]!, spans[3]!);
    if (type === 's' && digits >= 0) {
      const text = this.ctx.sharedStrings.get(digits);
      if (text === undefined) throw badInput.unreadableRetorno(BAD_SHARED_STRING);
      this.rowValues[slot] = text;
      return i;
    }
    const style = spans[4]! < 0 ? 0 : digitsNumber(buf, b, spans[4]!, spans[5]!) | 0;
    const raw = buf.slice(valueStart, valueEnd);
    this.rowValues[slot] = cellText(type, style, raw.indexOf('&') === -1 ? raw : decodeEntities(raw), null, this.ctx);
    return i;
  }

  private openCell(selfClosing: boolean): void {
    const xml = this.xml;
    const starts = this.starts;
    const ends = this.ends;
    xml.attrSpans(CELL_ATTRS, starts, ends);
    const column = columnAttr(xml, starts[0]!, ends[0]!);
    this.column = column >= 0 ? column : this.column + 1;
    if (this.hasHeader) {
      const i = this.mappedColumns.indexOf(this.column);
      this.slot = i === -1 ? NOT_KEPT : this.mappedSlots[i]!;
    } else {
      this.slot = PROBE;
    }
    if (this.slot === NOT_KEPT || selfClosing) {
      this.inCell = !selfClosing;
      this.xml.valueNext = !selfClosing;
      this.slot = selfClosing ? NOT_KEPT : this.slot;
      return;
    }
    this.inCell = true;
    this.xml.valueNext = true;
    this.type = typeAttr(xml, starts[1]!, ends[1]!);
    const s = starts[2]!;
    this.style = s < 0 ? 0 : numberAttr(xml, s, ends[2]!) | 0;
    this.value = '';
    this.inline = null;
  }

  private closeCell(): void {
    this.inCell = false;
    this.xml.collecting = false;
    this.inInline = false;
    this.inPhonetic = false;
    if (this.slot === NOT_KEPT) return;
    const text = cellText(this.type, this.style, this.value, this.inline, this.ctx);
    if (this.slot === PROBE) {
      if (text.trim() === '') return;
      this.rowHasContent = true;
      if (this.probeTexts.length < CANDIDATE_TEXTS) this.probeTexts.push(text.slice(0, 200));
      if (this.probeLine.length < TITLE_CHARS) this.probeLine = `${this.probeLine} ${text.slice(0, TITLE_CHARS)}`;
      const role = this.names.roleOf(text);
      if (role === undefined && this.probeHeaderLike) this.probeHeaderLike = hasColumnNameShape(text);
      // The leftmost column of a role wins when a header repeats one.
      if (role !== undefined && !this.probeRoles.has(role)) this.probeRoles.set(role, this.column);
      return;
    }
    this.rowValues[this.slot] = text;
  }
}

/** Zero-based column of a cell reference (`C7` → 2); -1 when it has no letters. */
function columnIndex(ref: string): number {
  let column = 0;
  let i = 0;
  for (; i < ref.length; i++) {
    const c = ref.charCodeAt(i) | 0x20; // lower case
    if (c < 97 || c > 122) break;
    column = column * 26 + (c - 96);
    if (column > 1 << 20) return -1;
  }
  return i === 0 ? -1 : column - 1;
}

/**
 * The attributes of a tag in the fast path's form, from just after its name (`at`): bounds of
 * the values of r, t and s (matched by local name) in `spans` (start, end pairs; -1 when
 * absent; the last occurrence wins, as in attrSpans()). Returns the position after the tag's
 * `>` (the character before it is `/` exactly when the tag is self-closing), or -1 when the tag
 * is in any other form: no space after the name, tabs or line breaks, whitespace around `=`, an
 * entity in r/t/s, or the chunk's end. Every read is bounds-checked (a read past the end would
 * be undefined, and each such read deoptimises).
 */
function fastAttrs(b: Uint8Array, at: number, n: number, spans: Int32Array): number {
  let i = at;
  if (i >= n || b[i]! !== 32) return -1;
  for (let k = 0; k < 6; k++) spans[k] = -1;
  for (;;) {
    if (i >= n) return -1;
    let c = b[i]!;
    if (c === 62 /* > */) return i + 1;
    if (c === 47 /* / */) return i + 1 < n && b[i + 1]! === 62 ? i + 2 : -1;
    if (c !== 32) return -1;
    do {
      if (++i >= n) return -1;
      c = b[i]!;
    } while (c === 32);
    if (c === 62 || c === 47) continue;
    // The local name starts after the name's last ':' (`x14ac:dyDescent`, `x:r`).
    let localStart = c === 58 ? i + 1 : i;
    while (c !== 61 /* = */) {
      if (c === 32 || c === 9 || c === 10 || c === 13 || c === 34 || c === 39 || c === 62 || c === 47) return -1;
      if (++i >= n) return -1;
      c = b[i]!;
      if (c === 58 /* : */) localStart = i + 1;
    }
    if (i === localStart && b[i - 1]! !== 58) return -1; // no name at all
    let slot = -1;
    if (i - localStart === 1) {
      const name = b[localStart]!;
      slot = name === 114 /* r */ ? 0 : name === 116 /* t */ ? 2 : name === 115 /* s */ ? 4 : -1;
    }
    if (i + 1 >= n) return -1;
    const quote = b[i + 1]!;
    if (quote !== 34 && quote !== 39) return -1;
    const start = i + 2;
    // Values are a few characters: a loop costs less than indexOf's call.
    let close = start;
    for (; close < n; close++) {
      const v = b[close]!;
      if (v === quote) break;
      if (v === 38 /* & */ && slot >= 0) return -1;
    }
    if (close >= n) return -1;
    if (slot >= 0) {
      spans[slot] = start;
      spans[slot + 1] = close;
    }
    i = close + 1;
  }
}

// The fast path's attribute readers: values known to hold no entity, so the raw bytes are the
// value, read without building strings (`buf` is the same text, for the rare string needed).

/** `columnAttr` of a value without entities. */
function letterColumn(b: Uint8Array, start: number, end: number): number {
  let column = 0;
  let i = start;
  for (; i < end; i++) {
    const lower = b[i]! | 0x20;
    if (lower < 97 || lower > 122) break;
    column = column * 26 + (lower - 96);
    if (column > 1 << 20) return -1;
  }
  return i === start ? -1 : column - 1;
}

/** `numberAttr` of a value without entities. */
function digitsNumber(buf: string, b: Uint8Array, start: number, end: number): number {
  if (end > start && end - start <= 9) {
    let n = 0;
    let i = start;
    for (; i < end; i++) {
      const d = b[i]! - 48;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    if (i === end) return n;
  }
  return Number(buf.slice(start, end));
}

/** `typeAttr` of a value without entities. */
function typeOf(buf: string, b: Uint8Array, start: number, end: number): string | undefined {
  if (start < 0) return undefined;
  return typeLiteral(end - start, b[start]!, b[start + 1]!, b[start + 2]!) ?? buf.slice(start, end);
}

/**
 * The usual `t` values as literals instead of new strings, from the value's length and first
 * three character codes (those past the value are not looked at); undefined for any other.
 */
function typeLiteral(len: number, c0: number, c1: number, c2: number): string | undefined {
  if (len === 1) {
    switch (c0) {
      case 115:
        return 's';
      case 110:
        return 'n';
      case 98:
        return 'b';
      case 101:
        return 'e';
      case 100:
        return 'd';
    }
  } else if (len === 3 && c0 === 115 && c1 === 116 && c2 === 114) {
    return 'str';
  }
  return undefined;
}

// Attribute values read straight from the tag's characters (bounds from attrSpans(); -1 when
// absent). Anything but the plain forms goes through the same decode-then-convert as a string.

/** Raw attribute value, entities decoded. */
function attrText(xml: TagScanner, start: number, end: number): string {
  const raw = xml.raw(start, end);
  return raw.indexOf('&') === -1 ? raw : decodeEntities(raw);
}

/** `columnIndex` of an `r` attribute; -1 when absent. */
function columnAttr(xml: TagScanner, start: number, end: number): number {
  if (start < 0) return -1;
  let column = 0;
  let i = start;
  for (; i < end; i++) {
    const c = xml.charCodeAt(i);
    if (c === 38 /* & */) return columnIndex(attrText(xml, start, end));
    const lower = c | 0x20;
    if (lower < 97 || lower > 122) break;
    column = column * 26 + (lower - 96);
    if (column > 1 << 20) return -1;
  }
  if (i === start) {
    // No letters: only an entity later in the value could still change that.
    for (let k = i; k < end; k++) if (xml.charCodeAt(k) === 38) return columnIndex(attrText(xml, start, end));
    return -1;
  }
  if (i < end && xml.charCodeAt(i) !== 38) {
    // Letters then something else: the rest cannot add letters unless it holds an entity.
    for (let k = i; k < end; k++) if (xml.charCodeAt(k) === 38) return columnIndex(attrText(xml, start, end));
  } else if (i < end) {
    return columnIndex(attrText(xml, start, end));
  }
  return column - 1;
}

/** `Number()` of an attribute value; NaN when absent. */
function numberAttr(xml: TagScanner, start: number, end: number): number {
  if (start < 0) return NaN;
  const len = end - start;
  if (len > 0 && len <= 9) {
    let n = 0;
    let i = start;
    for (; i < end; i++) {
      const d = xml.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    if (i === end) return n;
  }
  return Number(attrText(xml, start, end));
}

/** The `t` attribute; the usual values come back as literals instead of new strings. */
function typeAttr(xml: TagScanner, start: number, end: number): string | undefined {
  if (start < 0) return undefined;
  const literal = typeLiteral(end - start, xml.charCodeAt(start), xml.charCodeAt(start + 1), xml.charCodeAt(start + 2));
  return literal ?? attrText(xml, start, end);
}
