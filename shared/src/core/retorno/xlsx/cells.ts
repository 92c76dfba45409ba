// Cell value → text (SPEC §1.2): numbers without a trailing `.0`, date-formatted numbers as the
// DD/MM/YYYY the cell shows, booleans as Excel shows them, everything else as written.
import { badInput } from '../../errors.js';
import type { SharedStrings } from './strings.js';
import { cellString } from './xml.js';

/** Built-in number formats that display a date or time (ECMA-376 §18.8.30 and the CJK ids). */
const BUILTIN_DATE_FORMATS = new Set<number>([...range(14, 22), ...range(27, 36), ...range(45, 47), ...range(50, 58)]);

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

export function isBuiltinDateFormat(id: number): boolean {
  return BUILTIN_DATE_FORMATS.has(id);
}

/**
 * Whether a custom format code shows a date or time: a d, m, y, h or s token outside quoted
 * literals, `[...]` sections (colours, conditions, locales, elapsed `[h]`) and escaped or
 * padding characters (`\x`, `_x`, `*x`).
 */
export function isDateFormatCode(code: string): boolean {
  for (let i = 0; i < code.length; i++) {
    const c = code[i]!;
    if (c === '"') {
      const end = code.indexOf('"', i + 1);
      if (end === -1) return false;
      i = end;
    } else if (c === '[') {
      const end = code.indexOf(']', i + 1);
      if (end === -1) return false;
      i = end;
    } else if (c === '\\' || c === '_' || c === '*') {
      i++;
    } else if ('dmyhsDMYHS'.includes(c)) {
      return true;
    }
  }
  return false;
}

/** What a sheet needs to turn cells into text. */
export interface CellContext {
  readonly sharedStrings: SharedStrings;
  /** Per cellXfs index (a cell's `s`): whether its number format shows a date. */
  readonly dateStyles: readonly boolean[];
  readonly date1904: boolean;
}

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Shortest round-trip text; integers below 1e21 come out as plain digits. */
export function numberText(raw: string): string {
  // Plain integers (no sign, no leading zero, at most 15 digits, so exactly representable)
  // print as written: skip the regex and the round trip.
  const len = raw.length;
  if (len > 0 && len <= 15) {
    const first = raw.charCodeAt(0);
    if (first >= 49 && first <= 57) {
      let i = 1;
      while (i < len) {
        const c = raw.charCodeAt(i);
        if (c < 48 || c > 57) break;
        i++;
      }
      if (i === len) return raw;
    } else if (len === 1 && first === 48) {
      return raw;
    }
  }
  if (!NUMBER.test(raw)) return raw;
  const n = Number(raw);
  if (!Number.isFinite(n)) return raw;
  return n === 0 ? '0' : String(n);
}

const DAY_MS = 86_400_000;
const EPOCH_1900 = Date.UTC(1899, 11, 31); // serial 1 = 01/01/1900
const EPOCH_1904 = Date.UTC(1904, 0, 1); // serial 0 = 01/01/1904
const MAX_SERIAL = 2_958_465; // 31/12/9999, the last date Excel shows

/** The DD/MM/YYYY an Excel date serial shows; `undefined` when Excel shows no date for it. */
export function serialToDate(serial: number, date1904: boolean): string | undefined {
  if (!Number.isFinite(serial) || serial < 0 || serial >= MAX_SERIAL + 1) return undefined;
  const day = Math.floor(serial); // the time of day does not change the date shown
  if (date1904) return formatUtc(EPOCH_1904 + day * DAY_MS);
  // Excel keeps Lotus 1-2-3's fictitious 29/02/1900 (serial 60) and shows serial 0 as 00/01/1900.
  if (day === 0) return '00/01/1900';
  if (day === 60) return '29/02/1900';
  return formatUtc(EPOCH_1900 + (day > 60 ? day - 1 : day) * DAY_MS);
}

function formatUtc(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCDate(), 2)}/${pad(d.getUTCMonth() + 1, 2)}/${pad(d.getUTCFullYear(), 4)}`;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})/;

export const BAD_SHARED_STRING = 'referência a texto compartilhado inexistente.';

/**
 * Text of one cell from its type (`t`), style index (`s`), cached value (`<v>`) and inline
 * string (`<is>`, `null` when absent).
 */
export function cellText(type: string | undefined, style: number, value: string, inline: string | null, ctx: CellContext): string {
  switch (type) {
    case 's': {
      if (value === '') return '';
      const text = ctx.sharedStrings.get(Number(value));
      if (text === undefined) throw badInput.unreadableRetorno(BAD_SHARED_STRING);
      return text;
    }
    case 'inlineStr':
      return cellString(inline ?? value);
    case 'str':
      return cellString(value);
    case 'b':
      return value === '1' ? 'TRUE' : value === '0' ? 'FALSE' : value;
    case 'e':
      return value;
    case 'd': {
      const m = ISO_DATE.exec(value);
      return m ? `${m[3]}/${m[2]}/${m[1]}` : value;
    }
    default: {
      if (value === '') return inline !== null ? cellString(inline) : '';
      if (ctx.dateStyles[style] === true && NUMBER.test(value)) {
        const date = serialToDate(Number(value), ctx.date1904);
        if (date !== undefined) return date;
      }
      return numberText(value);
    }
  }
}
