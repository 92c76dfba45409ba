// One worksheet, scanned as a stream: find the header among the first 20 rows, then turn each
// data row into a RetornoRow, keeping only the mapped columns' values so rows with thousands of
// columns or huge unmapped cells cost nothing but scanning.
import type { RetornoRow } from '../../types.js';
import {
  BUILTIN_COLUMN_NAMES,
  betterCandidate,
  CANDIDATE_TEXTS,
  hasRequiredRoles,
  isBlank,
  ROLES,
  type ColumnNames,
  type HeaderCandidate,
  type Role,
} from '../columns.js';
import { cellText, type CellContext } from './cells.js';
import { appendCapped, decodeEntities, TagScanner, type TagHandler } from './xml.js';

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
// While looking for the header every cell is read, to test its name.
const PROBE = -2;

export class SheetScanner implements TagHandler {
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

  /** The best header candidate seen in rows 1–20, for the error when none qualifies. */
  candidate: HeaderCandidate | null = null;
  private probeTexts: string[] = [];

  constructor(
    private readonly ctx: CellContext,
    private readonly names: ColumnNames = BUILTIN_COLUMN_NAMES,
  ) {}

  /** Whether the rest of the sheet can be skipped (its end, or no header in rows 1–20). */
  get done(): boolean {
    return this.xml.done;
  }

  feed(chunk: string): void {
    this.xml.feed(chunk);
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
    const n = numberAttr(xml, this.rowStarts[0]!, this.rowEnds[0]!);
    this.rowNumber = Number.isInteger(n) && n > 0 ? n : this.rowNumber + 1;
    this.column = -1;
    this.rowHasContent = false;
    if (this.hasHeader) {
      const values = this.rowValues;
      for (let i = 0; i < 6; i++) values[i] = null;
    } else {
      this.probeRoles.clear();
      this.probeTexts = [];
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
      this.candidate = betterCandidate(this.candidate, { texts: this.probeTexts, roles: new Set(this.probeRoles.keys()) });
    }
    if (this.rowNumber <= HEADER_ROWS && hasRequiredRoles(this.probeRoles)) {
      this.useHeader(this.probeRoles);
    } else if (this.rowNumber >= HEADER_ROWS) {
      this.xml.done = true; // no header in rows 1–20: the sheet is skipped
    }
  }

  private useHeader(roles: Map<Role, number>): void {
    this.hasHeader = true;
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
      const role = this.names.roleOf(text);
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
  const len = end - start;
  if (len === 1) {
    switch (xml.charCodeAt(start)) {
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
  } else if (len === 3 && xml.charCodeAt(start) === 115 && xml.charCodeAt(start + 1) === 116 && xml.charCodeAt(start + 2) === 114) {
    return 'str';
  }
  return attrText(xml, start, end);
}
