// The xlsx writer's cell text (core/output/xlsx.ts): most values are written as they are after one
// test, and the full escaping runs only for a value that holds a character it could change. The
// shortcut must answer exactly what the full escaping answers, on any text. White space is marked
// to be kept only where a value has more than single spaces between words: a reader must still
// get every value back as written.
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { promisify } from 'node:util';
import ExcelJS from 'exceljs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cellText, escapedCellText, xlsxStream } from '@censo/shared';

// Plain text, the characters the escaping acts on, and pieces of `_xHHHH_` and surrogate pairs.
const piece = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 2, arbitrary: fc.constantFrom('&', '<', '>', '"', "'", '_', '\u0000', '\u0008', '\t', '\n', '\r', '\u000b', '\u001f') },
  { weight: 2, arbitrary: fc.constantFrom('\ud83d', '\ude00', '\ud83d\ude00', '\ufffe', '\uffff', '\ufffd', 'ç', 'ã', '–') },
  { weight: 2, arbitrary: fc.constantFrom('_x000D_', '_x0041_', '_x00', 'x0041_', '_X000d_', '__x000D__') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) },
);
const text = fc.array(piece, { maxLength: 12 }).map((parts) => parts.join(''));

describe('cellText', () => {
  it('answers what the full escaping answers, on any text', () => {
    fc.assert(
      fc.property(text, (value) => {
        expect(cellText(value)).toBe(escapedCellText(value));
      }),
      { numRuns: 5000 },
    );
  });

  it('leaves ordinary values as they are and escapes the rest', () => {
    expect(cellText('MARIA DA CONCEIÇÃO – 12/03/1980')).toBe('MARIA DA CONCEIÇÃO – 12/03/1980');
    expect(cellText('A & B <c> "d"')).toBe('A &amp; B &lt;c&gt; &quot;d&quot;');
    expect(cellText('a\u0000b\ud800c\ud83d\ude00\r\n')).toBe('abc\ud83d\ude00&#13;\n');
    expect(cellText('ALU_x000D_1')).toBe('ALU_x005F_x000D_1');
  });
});

describe('white space in the xlsx answers', () => {
  const values = [
    ' leading',
    'trailing ',
    'two  spaces',
    'tab\there',
    'line\nbreak',
    'crlf\r\nend',
    '\u00a0nbsp',
    '   ',
    'plain words here',
    '',
  ];

  it('marks only the texts whose white space a program could drop, and exceljs reads every value back', async () => {
    const bytes = await buffer(
      xlsxStream(
        'd',
        ['valor'],
        (async function* () {
          for (const value of values) yield [value];
        })(),
      ),
    );
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(bytes as unknown as ArrayBuffer);
    const read: string[] = [];
    workbook.worksheets[0]!.eachRow({ includeEmpty: true }, (row, number) => {
      if (number > 1) read.push(String(row.getCell(1).text));
    });
    expect(read).toEqual(values);

    // The sheet as written: which texts carry the mark.
    const file = path.join(os.tmpdir(), `censo-xlsx-space-${process.pid}.xlsx`);
    await writeFile(file, bytes);
    try {
      const { stdout } = await promisify(execFile)('unzip', ['-p', file, 'xl/worksheets/sheet1.xml']);
      const marked = [...stdout.matchAll(/<is><t( xml:space="preserve")?>/g)].slice(1).map((m) => m[1] !== undefined);
      expect(marked).toEqual([true, true, true, true, true, true, true, true, false, false]);
    } finally {
      await rm(file, { force: true });
    }
  });
});
