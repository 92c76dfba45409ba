// The xlsx reader takes the usual forms of cells, rows and shared string items through a shortcut
// that must have exactly the effect of the tag-by-tag scanner. The shortcut only takes a tag
// written with single spaces, so the same workbook with a tab after every tag name is read
// entirely tag by tag: random workbooks read both ways must give the same rows, or the same error.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildXlsx, readRows, stylesXml, textRow, xmlEscape } from '../helpers/xlsx-builders.js';

// The header's names without accents, so that most drawn sheets are all ASCII.
const ASCII_HEADER = ['Registro', 'Linha', 'Codigo na Escola', 'Campo', 'Mensagem', 'Conteudo'];

const itemText = fc.constantFrom(
  '30',
  'P1',
  'Número do CPF',
  'Diverge da base da Receita Federal.',
  '1 -- 2',
  ' ',
  'a_x000D_b',
  '',
  'a&amp;b',
  '&#x1F600;',
  '&#xD800;',
  'x>y',
);
// Shared string items in the forms writers use: plain, space-preserving, rich text runs,
// phonetic runs, empty, CDATA.
const item = fc.oneof(
  itemText.map((t) => `<si><t>${t}</t></si>`),
  itemText.map((t) => `<si><t xml:space="preserve">${t}</t></si>`),
  fc.tuple(itemText, itemText).map(([a, b]) => `<si><r><rPr><b/></rPr><t>${a}</t></r><r><t xml:space="preserve">${b}</t></r></si>`),
  fc.tuple(itemText, itemText).map(([a, b]) => `<si><t>${a}</t><rPh sb="0" eb="1"><t>${b}</t></rPh></si>`),
  fc.constantFrom('<si/>', '<si></si>', '<si><t/></si>', '<si><t><![CDATA[a<b]]></t></si>', '<si><t>a</t> </si>', '<si> <t>b</t></si>'),
);
const sst = fc
  .array(item, { minLength: 8, maxLength: 12 })
  .map((items) => `<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">${items.join('')}</sst>`);

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
  fc.string({ unit: fc.constantFrom('a', '1', ' ', '>', '"', "'"), maxLength: 6 }),
  // Rarely non-ASCII: the shortcut reads only all-ASCII chunks, the others go tag by tag.
  fc.constantFrom('é', 'ção 😀'),
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

async function read(rows: string, sharedStrings: string): Promise<unknown> {
  const path = await buildXlsx({
    sheets: [{ rows: textRow(1, ASCII_HEADER) + rows }],
    sharedStrings,
    styles: stylesXml([0, 14, 0, 22], {}),
  });
  try {
    return await readRows(path, 'xlsx');
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('xlsx shortcut for usual cells and shared strings', () => {
  it('reads random cells and shared strings exactly as the tag-by-tag scanner does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(dataRow, { minLength: 1, maxLength: 6 }), sst, async (rows, strings) => {
        const slow = (xml: string): string => xml.replace(/<(c|row|si|t|v)([ />])/g, '<$1\t$2').replace(/\t /g, '\t');
        const xml = rows.join('');
        expect(await read(xml, strings)).toEqual(await read(slow(xml), slow(strings)));
      }),
      { numRuns: 500 },
    );
  });
});
