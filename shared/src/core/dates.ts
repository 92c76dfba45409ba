// Birth dates in the retorno-rf answer are always DD/MM/YYYY (SPEC §3.2), whatever shape the
// return or the text file used.

const DMY = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/;
const COMPACT = /^(\d{2})(\d{2})(\d{4})$/;
// An ISO timestamp is read as its calendar date: no time-zone conversion, so
// `2014-03-15T23:00:00-03:00` stays the 15th.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt].*)?$/;

/**
 * `DD/MM/YYYY` from `DD/MM/YYYY`, `D/M/YYYY`, `DDMMYYYY`, `YYYY-MM-DD` or an ISO timestamp.
 * Surrounding white space is ignored when recognising; anything else (including an impossible
 * day or month) is returned exactly as given.
 */
export function toDataBr(value: string): string {
  const text = value.trim();
  let match = DMY.exec(text) ?? COMPACT.exec(text);
  if (match) return format(match[1]!, match[2]!, match[3]!) ?? value;
  match = ISO.exec(text);
  if (match) return format(match[3]!, match[2]!, match[1]!) ?? value;
  return value;
}

function format(day: string, month: string, year: string): string | null {
  const d = Number(day);
  const m = Number(month);
  if (d < 1 || d > 31 || m < 1 || m > 12) return null;
  return `${day.padStart(2, '0')}/${month.padStart(2, '0')}/${year}`;
}
