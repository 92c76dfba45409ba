// The school a return is about (SPEC §1.2, issue 54): its INEP code when the file says it. The
// rows' `Código na Escola` is a person's code, so the school comes from outside the rows: a
// wrapped JSON's top-level property (`{"escola": "12345678 - ESCOLA X", "erros": [...]}`), or an
// xlsx title row above the header (`Escola: 12345678 - ESCOLA X`). A school is the same school in
// every round by this code, whatever the file is called.
import { normalize } from '../normalize.js';

/** Top-level JSON keys (normalised as column names are) whose value names the school. */
export const ESCOLA_KEYS: ReadonlySet<string> = new Set([
  'escola',
  'codigo da escola',
  'co_entidade',
  'codigo inep da escola',
  'inep da escola',
]);

/** Whether a top-level JSON key names the school. */
export const isEscolaKey = (key: string): boolean => ESCOLA_KEYS.has(normalize(key));

/** An INEP school code: eight digits (`^\d{8}\b`), alone or before the school's name. */
const CODIGO_NO_INICIO = /^(\d{8})\b/;

/** A JSON number that is a code: eight digits, as a spreadsheet may have exported it (`12345678.0`). */
const CODIGO_NUMERO = /^(\d{8})(?:\.0+)?$/;

/**
 * The INEP code a school property's value holds, or null: a string that is, or starts with, eight
 * digits (`"12345678"`, `"12345678 - ESCOLA X"`), or a number of eight digits. A name without a
 * code (`"E. E. X"`) names nothing: a name is not a key two rounds share.
 */
export function codigoInepDe(value: string, kind: 'string' | 'number'): string | null {
  const match = (kind === 'number' ? CODIGO_NUMERO : CODIGO_NO_INICIO).exec(kind === 'number' ? value : value.trim());
  return match ? match[1]! : null;
}

/**
 * A title row's code (xlsx, rows above the header): `Escola`, `Código da escola`, `Código INEP`
 * or `INEP` followed by eight digits, with only punctuation or spaces between
 * (`Escola: 12345678 - E. M. X`, `INEP 12345678`). The text is the row's cells joined by spaces.
 */
const TITULO = /(?:^|[^\p{L}\p{N}])(?:escola|inep)[^\p{L}\p{N}]*(\d{8})(?!\p{N})/u;

export function codigoInepDoTitulo(text: string): string | null {
  const match = TITULO.exec(normalize(text));
  return match ? match[1]! : null;
}
