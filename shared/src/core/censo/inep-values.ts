// Values as INEP's migration layout requires them (SPEC §3.4), for the fields the corrected census
// file rewrites. Each returns null when the value cannot be written that way; the field then
// keeps the text file's value and the correction counts as not applied.
import { toDataBr } from '../dates.js';

/** The longest name the layout's `Nome completo` field takes. */
export const MAX_NOME = 100;

/** Upper case, accents removed, only `A`–`Z` and single spaces, at most 100 characters. */
export function inepNome(value: string): string | null {
  const text = value
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
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

/** `DD/MM/YYYY` from any date shape SPEC §3.2 recognises. */
export function inepData(value: string): string | null {
  const text = toDataBr(value);
  return /^\d{2}\/\d{2}\/\d{4}$/.test(text) ? text : null;
}
