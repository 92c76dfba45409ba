// One worksheet, scanned as a stream: find the header among the first 20 rows, then turn each
// data row into a RetornoRow, keeping only the mapped columns' values so rows with thousands of
// columns or huge unmapped cells cost nothing but scanning.
import type { RetornoRow } from '../../types.js';
import { hasRequiredRoles, isBlank, roleOf, ROLES, type Role } from '../columns.js';
import { cellText, type CellContext } from './cells.js';
import { appendCapped, TagScanner, type TagHandler } from './xml.js';

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
  private readonly cellAttrs: (string | undefined)[] = [undefined, undefined, undefined];

  constructor(private readonly ctx: CellContext) {}

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
    const r = this.xml.attr('r');
    const n = r === undefined ? NaN : Number(r);
    this.rowNumber = Number.isInteger(n) && n > 0 ? n : this.rowNumber + 1;
    this.column = -1;
    this.rowHasContent = false;
    if (this.hasHeader) {
      const values = this.rowValues;
      for (let i = 0; i < 6; i++) values[i] = null;
    } else {
      this.probeRoles.clear();
    }
    if (selfClosing) this.closeRow();
  }

  private closeRow(): void {
    if (this.hasHeader) {
      this.emitRow();
      return;
    }
    if (this.rowHasContent) this.hasContent = true;
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
    const attrs = this.cellAttrs;
    attrs[0] = attrs[1] = attrs[2] = undefined;
    this.xml.attrs(CELL_ATTRS, attrs);
    const ref = attrs[0];
    const column = ref === undefined ? -1 : columnIndex(ref);
    this.column = column >= 0 ? column : this.column + 1;
    if (this.hasHeader) {
      const i = this.mappedColumns.indexOf(this.column);
      this.slot = i === -1 ? NOT_KEPT : this.mappedSlots[i]!;
    } else {
      this.slot = PROBE;
    }
    if (this.slot === NOT_KEPT || selfClosing) {
      this.inCell = !selfClosing;
      this.slot = selfClosing ? NOT_KEPT : this.slot;
      return;
    }
    this.inCell = true;
    this.type = attrs[1];
    const s = attrs[2];
    this.style = s === undefined ? 0 : Number(s) | 0;
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
      const role = roleOf(text);
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
