// The xlsx reader takes the usual forms of cells (and of shared string items) through a shortcut
// that must have exactly the effect of the tag-by-tag scanner. The shortcut only takes a tag
// written with single spaces, so the same workbook with a tab after every tag name is read
// entirely tag by tag: random workbooks read both ways must give the same rows, or the same error.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildXlsx, HEADER, readRows, stylesXml, textRow, xmlEscape } from '../helpers/xlsx-builders.js';

const SHARED = ['30', 'P1', 'Número do CPF', 'Diverge da base da Receita Federal.', '1 -- 2', ' ', 'a_x000D_b', 'x'];

const ref = fc.oneof(
  fc
    .constantFrom('A', 'B', 'C', 'D', 'E', 'F', 'G', 'AA', 'a', 'c', '', '1', 'XFD', 'ZZZZZZ')
    .chain((col) => fc.constantFrom(`${col}2`, col, `${col}x`, `${col}&amp;`)),
  fc.constant(undefined),
);
const type = fc.constantFrom(undefined, 's', 'n', 'str', 'b', 'e', 'd', 'inlineStr', 'S', 'x', 'st&amp;r');
const style = fc.constantFrom(undefined, '0', '1', '2', '3', '9', 'x', '-1', '1e0', ' 1');
const value = fc.oneof(
  fc.constantFrom('0', '1', '2', '7', '8', '9', '007', '123456789', '1234567890', '', ' 1', '1.5', '-0', '0x1', '1e1'),
  fc.constantFrom('45000', '45000.75', '60', 'TRUE', '#N/A', '2024-01-31T00:00:00', 'a&amp;b', '&#x41;', '&lt;&gt;', 'x_x0041_'),
  fc.string({ unit: fc.constantFrom('a', '1', ' ', 'é', '>', '"', "'"), maxLength: 6 }),
);
const extra = fc.constantFrom(
  '',
  ' cm="1"',
  " vm='2'",
  ' x:r="B2"',
  ' :r="C2"',
  ' a:="1"',
  ' x14ac:s="2"',
  ' x:t="s"',
  ' t="s"',
  ' r="D2"',
  ' s="1"',
  '  ',
  ' ph="1" ',
);

const cell = fc
  .record({ ref, type, style, value, extra, before: extra, form: fc.constantFrom('v', 'v', 'v', 'self', 'empty', 'formula', 'vself') })
  .map(({ ref, type, style, value, extra, before, form }) => {
    const attrs =
      before +
      (ref === undefined ? '' : ` r="${ref}"`) +
      (type === undefined ? '' : ` t="${type}"`) +
      (style === undefined ? '' : ` s='${style}'`) +
      extra;
    switch (form) {
      case 'self':
        return `<c${attrs}/>`;
      case 'empty':
        return `<c${attrs}></c>`;
      case 'formula':
        return `<c${attrs}><f>1+1</f><v>${xmlEscape(value)}</v></c>`;
      case 'vself':
        return `<c${attrs}><v/></c>`;
      default:
        return `<c${attrs}><v>${value.includes('&') ? value : xmlEscape(value)}</v></c>`;
    }
  });

const dataRow = fc
  .tuple(fc.array(cell, { maxLength: 9 }), fc.constantFrom('', ' spans="1:6"', ' r="2"'))
  .map(([cells, attrs]) => `<row${attrs}>${cells.join('')}</row>`);

async function read(rows: string): Promise<unknown> {
  const path = await buildXlsx({
    sheets: [{ rows: textRow(1, [...HEADER]) + rows }],
    sharedStrings: SHARED,
    styles: stylesXml([0, 14, 0, 22], {}),
  });
  try {
    return await readRows(path, 'xlsx');
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('xlsx shortcut for usual cells', () => {
  it('reads random cells exactly as the tag-by-tag scanner does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(dataRow, { minLength: 1, maxLength: 6 }), async (rows) => {
        const xml = rows.join('');
        const slow = xml.replace(/<(c|row|si|t|v)([ />])/g, '<$1\t$2').replace(/\t /g, '\t');
        expect(await read(xml)).toEqual(await read(slow));
      }),
      { numRuns: 300 },
    );
  });
});
