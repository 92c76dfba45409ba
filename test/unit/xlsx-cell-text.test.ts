// The xlsx writer's cell text (core/output/xlsx.ts): most values are written as they are after one
// test, and the full escaping runs only for a value that holds a character it could change. The
// shortcut must answer exactly what the full escaping answers, on any text.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cellText, escapedCellText } from '@censo/shared';

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
    expect(cellText('a\u0000b\ud800c\ud83d\ude00')).toBe('abc\ud83d\ude00');
    expect(cellText('ALU_x000D_1')).toBe('ALU_x005F_x000D_1');
  });
});
