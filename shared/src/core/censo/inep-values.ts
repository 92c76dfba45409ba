// Values as INEP's migration layout requires them (SPEC §3.4), for the fields the corrected census
// file rewrites. Each returns null when the value cannot be written that way; the field then
// keeps the text file's value and the correction counts as not applied.
import anyAscii from 'any-ascii';
import { parseDataBr } from '../dates.js';

/** The longest name the layout's `Nome completo` field takes. */
export const MAX_NOME = 100;

/** A value already as the layout writes it: words of `A`–`Z` with single spaces between. */
const INEP_NOME = /^[A-Z]+(?: [A-Z]+)*$/;

/** A Latin letter that is still not ASCII once its accents are taken off. */
const LATIN_NOT_ASCII = /(?![\p{ASCII}])\p{Script=Latin}/gu;

/**
 * Upper case, accents removed, only `A`–`Z` and single spaces, at most 100 characters. Latin
 * letters that are not a letter plus accents (`Ø`, `Æ`, `Œ`, `ß`, `Đ`, `Ł`, `Þ`…, which NFD
 * leaves whole) are written as their usual Latin spelling (`O`, `AE`, `OE`, `SS`, `D`, `L`, `TH`)
 * rather than dropped; other scripts are not transliterated.
 */
export function inepNome(value: string): string | null {
  // Most names in a return are already written this way; the full pass below would give them back
  // unchanged (NFD, marks, case and spacing are all no-ops on them) at a few microseconds each.
  if (value.length <= MAX_NOME && INEP_NOME.test(value)) return value;
  return inepNomeCompleto(value);
}

/** {@link inepNome} without its shortcut for a value already written so (its differential test's reference). */
export function inepNomeCompleto(value: string): string | null {
  const text = value
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(LATIN_NOT_ASCII, (letter) => anyAscii(letter))
    .toUpperCase()
    .replace(/[^A-Z ]/g, '')
    .replace(/ {2,}/g, ' ')
    .trim()
    .slice(0, MAX_NOME)
    .trimEnd();
  return text === '' ? null : text;
}

/**
 * Exactly `digits` digits once the usual punctuation of a CPF or an id is taken out
 * (`529.982.247-25`): anything else is not a value the layout can hold.
 */
function digitsOnly(value: string, digits: number): string | null {
  const text = value.replace(/[\s.\-/]/g, '');
  return text.length === digits && /^\d+$/.test(text) ? text : null;
}

export function inepCpf(value: string): string | null {
  return digitsOnly(value, 11);
}

export function inepId(value: string): string | null {
  return digitsOnly(value, 12);
}

/** `DD/MM/YYYY` from any date shape SPEC §3.2 recognises; an impossible date cannot be written. */
export function inepData(value: string): string | null {
  return parseDataBr(value);
}
