// The SQL pieces the i-Educar script is written with (issue 46): literals that no value can break
// out of, and the census's writing rule for names as a PostgreSQL expression, so the script can
// tell "still holds what was sent" from "changed since" on the database's own values, with no
// function of ours created in i-Educar's database (the preview must stay read-only).
import anyAscii from 'any-ascii';
import { MAX_NOME } from '../censo/inep-values.js';

/**
 * A string literal. Doubling `'` is enough only while `standard_conforming_strings` is on (the
 * default since PostgreSQL 9.1); a value with a backslash is written as an `E''` string, whose
 * meaning does not depend on that setting. NUL cannot be stored in PostgreSQL text: dropped.
 */
export function sqlLiteral(value: string): string {
  const text = value.replace(/\0/g, '');
  const quoted = text.replace(/'/g, "''");
  return text.includes('\\') ? `E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/**
 * Text for a `--` comment: PostgreSQL ends a comment at CR or LF, so a value holding one would
 * turn the rest of it into SQL. Every control character becomes a space.
 */
export function sqlComment(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ');
}

// The letters of Latin-1 and Latin Extended-A (and º ª) and their ASCII spelling as `inepNome`
// writes them (NFD without marks, then any-ascii for the Latin letters NFD leaves whole). `translate` maps one character to one; the letters
// spelt with two (ß, æ, œ, þ) are replaced first. A name holding a letter missing here compares
// as changed: it is reported, never overwritten.
const ACCENTED =
  'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝàáâãäåçèéêëìíîïðñòóôõöøùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĸĹĺĻļĽľĿŀŁłŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžſºª';
const BASE =
  'AAAAAACEEEEIIIIDNOOOOOOUUUUYaaaaaaceeeeiiiidnoooooouuuuyyAaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiJjKkqLlLlLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzsoa';
const TWO_LETTERS: ReadonlyArray<readonly [string, string]> = [
  ['ß', 'ss'],
  ['ẞ', 'SS'],
  ['æ', 'ae'],
  ['Æ', 'AE'],
  ['œ', 'oe'],
  ['Œ', 'OE'],
  ['þ', 'th'],
  ['Þ', 'TH'],
  ['ĳ', 'ij'],
  ['Ĳ', 'IJ'],
  ['ŋ', 'ng'],
  ['Ŋ', 'NG'],
  ['ŉ', 'n'],
];

const unaccented = (expression: string) =>
  TWO_LETTERS.reduce(
    (inner, [letter, ascii]) => `replace(${inner}, '${letter}', '${ascii}')`,
    `translate(${expression}, '${ACCENTED}', '${BASE}')`,
  );

/**
 * `inepNome` (SPEC §3.4) in SQL: upper case, accents removed, only `A`–`Z` and single spaces,
 * trimmed, at most 100 characters. Accents go before `upper`, which leaves non-ASCII letters
 * alone in a database whose locale is C.
 */
export function sqlNomeCenso(expression: string): string {
  return `rtrim(left(btrim(regexp_replace(regexp_replace(upper(${unaccented(expression)}), '[^A-Z ]', '', 'g'), ' {2,}', ' ', 'g')), ${MAX_NOME}))`;
}

/** Laravel's `Str::slug($name, ' ')`, lower-cased, in SQL (for a name the script does not know: the social name). */
export function sqlSlug(expression: string): string {
  return `lower(btrim(regexp_replace(regexp_replace(${unaccented(expression)}, '[^A-Za-z0-9\\s-]', '', 'g'), '[\\s-]+', ' ', 'g')))`;
}

/**
 * `pessoa.slug` as i-Educar's PHP writes it when a name changes (`Str::lower(Str::slug($nome,
 * ' '))`, clsPessoa_::edita): ASCII letters and digits, lower case, hyphens and white space as
 * single spaces, other punctuation dropped (`D'Ávila` → `davila`). No trigger keeps it; its name
 * search reads it.
 */
export function slugOf(name: string): string {
  return anyAscii(name)
    .toLowerCase()
    .replace(/[^a-z0-9\s-]/g, '')
    .replace(/[\s-]+/g, ' ')
    .trim();
}

/**
 * A value as the script displays it (issue 56): on one line, whatever it holds. Control
 * characters, NEL and the Unicode line separators are written as JSON writes them (`\n`,
 * `\u0085`), so no value can end a comment, split a preview row or look like a line of SQL.
 */
export function sqlShown(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return named[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/** A text expression of the database shown on one line: its control characters as spaces. */
export function sqlOneLine(expression: string): string {
  return `regexp_replace(${expression}, E'[\\\\x01-\\\\x1f\\\\x7f-\\\\x9f\\\\u2028\\\\u2029]', ' ', 'g')`;
}
