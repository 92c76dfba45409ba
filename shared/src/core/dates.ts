// Birth dates in the retorno-rf answer are always DD/MM/YYYY (SPEC §3.2), whatever shape the
// return or the text file used.

const CANONICAL = /^\d\d\/\d\d\/\d{4}$/;
const DMY = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/;
const COMPACT = /^(\d{2})(\d{2})(\d{4})$/;
// An ISO timestamp is read as its calendar date: no time-zone conversion, so
// `2014-03-15T23:00:00-03:00` stays the 15th.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt].*)?$/;

/**
 * `DD/MM/YYYY` from `DD/MM/YYYY`, `D/M/YYYY`, `DDMMYYYY`, `YYYY-MM-DD` or an ISO timestamp, or
 * null when the value is none of these. Surrounding white space is ignored. A shape that names
 * no day of the calendar (`31/02/2014`, `29/02/2015`, month 13) is not a date in that format:
 * null too, so it is never passed off as a normalised date.
 */
export function parseDataBr(value: string): string | null {
  const text = value.trim();
  // The shape INEP writes is its own answer: no new string for each of a return's dates.
  if (CANONICAL.test(text)) {
    const digit = (at: number): number => text.charCodeAt(at) - 48;
    const year = digit(6) * 1000 + digit(7) * 100 + digit(8) * 10 + digit(9);
    return isDay(digit(0) * 10 + digit(1), digit(3) * 10 + digit(4), year) ? text : null;
  }
  return parseDataBrCompleto(text);
}

/** {@link parseDataBr} without its shortcut for `DD/MM/YYYY` (its differential test's reference). */
export function parseDataBrCompleto(value: string): string | null {
  const text = value.trim();
  let match = DMY.exec(text) ?? COMPACT.exec(text);
  if (match) return format(match[1]!, match[2]!, match[3]!);
  match = ISO.exec(text);
  if (match) return format(match[3]!, match[2]!, match[1]!);
  return null;
}

/** {@link parseDataBr}, with anything it does not recognise returned exactly as given (§3.2). */
export function toDataBr(value: string): string {
  return parseDataBr(value) ?? value;
}

function format(day: string, month: string, year: string): string | null {
  if (!isDay(Number(day), Number(month), Number(year))) return null;
  return `${day.padStart(2, '0')}/${month.padStart(2, '0')}/${year}`;
}

function isDay(day: number, month: number, year: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(month, year);
}

/** Days of a month in the Gregorian calendar (the one INEP's dates use). */
function daysIn(month: number, year: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
