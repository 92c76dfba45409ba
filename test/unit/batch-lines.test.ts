// A batch's task writes its divergences as lines of the batch's combined CSV (SPEC §7.3), one line
// a divergence, field by field (batchLine); the combined answer sends them as they are. They must
// be the very bytes the project's CSV writer gives the same fields: `csvLine` of the leading
// fields then the item's cells (the formula guard, the quoting, an absent value as an empty cell).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DIVERGENCIA_COLUMNS, batchLine, batchLinePrefix, cellValues, csvLine } from '@censo/shared';

// The characters the CSV writer treats apart (quote, comma, CR, LF, `;`, the formula triggers,
// spaces a `;`-reader trims) among ordinary and non-ASCII ones.
const CHARS = ['"', ',', '\r', '\n', ';', '=', '+', '-', '@', '\t', ' ', '\u00a0', '\u200b', "'", 'a', 'Z', '0', 'ç', 'Ã', '😀'];
const text = fc.array(fc.constantFrom(...CHARS), { maxLength: 12 }).map((chars) => chars.join(''));
const value = fc.oneof(text, fc.boolean(), fc.constant(null), fc.constant(undefined), fc.integer());
const item = fc.dictionary(fc.constantFrom(...DIVERGENCIA_COLUMNS), value);

describe('batchLine', () => {
  it('is csvLine of the leading fields and the cells, byte for byte', () => {
    fc.assert(
      fc.property(fc.tuple(text, text), item, (leading, divergencia) => {
        const expected = csvLine([...leading, ...cellValues(divergencia, DIVERGENCIA_COLUMNS)]);
        expect(batchLine(batchLinePrefix(leading), divergencia, DIVERGENCIA_COLUMNS)).toBe(expected);
      }),
      { numRuns: 2000, seed: 55 },
    );
  });

  it('writes a divergence as the combined CSV shows it', () => {
    const line = batchLine(
      batchLinePrefix(['11000001', 'escola "a".xlsx']),
      {
        codigo_na_escola: '123',
        linha: '7',
        campo: 'Nome',
        enviado: '=HYPERLINK("x")',
        correto: 'MARIA, DA SILVA',
        is_filiacao: false,
        chave: null,
        correcao: 'corrigir',
      },
      DIVERGENCIA_COLUMNS,
    );
    expect(line).toBe('11000001,"escola ""a"".xlsx",123,7,Nome,"\'=HYPERLINK(""x"")","MARIA, DA SILVA",false,,corrigir\r\n');
  });
});
