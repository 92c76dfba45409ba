// The text of a JSON row's values (SPEC §1.2): strings as they are, numbers as the decimal text the
// file wrote (JSON.parse would lose digits past 2^53), booleans as words, anything else empty.
import { isDigit, isWs } from './bytes.js';

/** SPEC §1.2: strings as they are, numbers as decimal text, booleans as words, anything else empty. */
export function valueText(value: unknown, raw: string | undefined): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
      if (raw !== undefined && /^-?\d+$/.test(raw)) return raw; // exact digits past 2^53
      return Number.isFinite(value) ? (value === 0 ? '0' : String(value)) : (raw ?? String(value));
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return '';
  }
}

/** Whether JSON.parse lost a number's digits (an integer past 2^53, or an overflow). */
export function needsRawNumbers(element: Record<string, unknown>): boolean {
  for (const key in element) {
    const v = element[key];
    if (typeof v === 'number' && !Number.isSafeInteger(v) && (Number.isInteger(v) || !Number.isFinite(v))) return true;
  }
  return false;
}

/** The raw number tokens of an object's own properties, by key (slow path, rarely taken). */
export function rawNumberTokens(text: string): Map<string, string> {
  const tokens = new Map<string, string>();
  let depth = 0;
  let key: string | undefined;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      if (depth === 1) {
        const after = skipWs(text, j + 1);
        key = text.charCodeAt(after) === 0x3a ? (JSON.parse(text.slice(i, j + 1)) as string) : undefined;
      }
      i = j + 1;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      i++;
    } else if (depth === 1 && (c === 0x2d || isDigit(c)) && key !== undefined) {
      let j = i + 1;
      while (j < text.length && /[0-9eE.+-]/.test(text[j]!)) j++;
      if (!tokens.has(key)) tokens.set(key, text.slice(i, j));
      key = undefined;
      i = j;
    } else {
      i++;
    }
  }
  return tokens;
}

function skipWs(text: string, i: number): number {
  while (i < text.length && isWs(text.charCodeAt(i))) i++;
  return i;
}
