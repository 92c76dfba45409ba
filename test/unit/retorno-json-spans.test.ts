// The JSON scanner hands V8's JSON.parse whole spans of row elements, found by parsing them, and
// skims elements one by one (strings and depth) only where a span is refused
// (shared/src/core/retorno/json/scanner.ts). The skim alone is the reference: on random documents
// whose strings are full of the bytes a span could be fooled by (`}`, `]`, `"`, `\`, `},{`), with
// nested values, numbers JSON.parse cannot keep exactly, strings at a cell's limit, elements that
// are not objects, cut into random chunks, and on random damage to them, both must give the same
// rows or the same error.
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { BadInputError, type RetornoRow } from '@censo/shared';
// An internal of the core, imported from the build the suite runs (tests use dist/, not src/).
import { RowsCollector } from '../../shared/dist/core/retorno/json/rows.js';
import { JsonRowsScanner } from '../../shared/dist/core/retorno/json/scanner.js';

const CELL_LIMIT = 32_767;

type Outcome = { rows: RetornoRow[] } | { error: string };

/** What the reader makes of `bytes` pushed in the pieces `cuts` makes; errors as the reader words them. */
function read(bytes: Buffer, cuts: readonly number[], spans: boolean): Outcome {
  const scanner = new JsonRowsScanner(undefined, { spans });
  const rows: RetornoRow[] = [];
  try {
    let at = 0;
    for (const cut of [...cuts].sort((a, b) => a - b).concat(bytes.length)) {
      if (cut <= at) continue;
      scanner.push(bytes.subarray(at, cut));
      rows.push(...scanner.take());
      at = cut;
    }
    scanner.end();
    rows.push(...scanner.take());
    return { rows };
  } catch (err) {
    // readJsonBatches turns anything but a BadInputError into "não é um JSON válido." (failure.ts).
    return { error: err instanceof BadInputError ? err.message : 'não é um JSON válido.' };
  }
}

// JSON text is built by hand, so numbers can be written as no double holds them.
const tricky = fc.string({
  unit: fc.constantFrom('}', ']', '{', '[', '"', '\\', ',', ':', ' ', '\n', 'a', 'é', '😀', '\u0001'),
  maxLength: 12,
});
const stringText = fc
  .oneof({ weight: 3, arbitrary: tricky }, fc.string({ maxLength: 8 }), fc.constant('},{"Campo":"x"}'))
  .map((s) => JSON.stringify(s));
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom('12345678901234567890', '-9007199254740993', '1e400', '0.1e1', '-0'),
);
const scalarText = fc.oneof({ weight: 4, arbitrary: stringText }, numberText, fc.constantFrom('true', 'false', 'null'));
const { valueText } = fc.letrec<{ valueText: string }>((tie) => ({
  valueText: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: scalarText },
    fc.array(tie('valueText'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc
      .array(fc.tuple(stringText, tie('valueText')), { maxLength: 3 })
      .map((entries) => `{${entries.map(([k, v]) => `${k}:${v}`).join(',')}}`),
  ),
}));
const KEYS = ['Registro', 'Linha', 'Código na Escola', 'Campo', 'Mensagem', 'Conteúdo'].map((k) => JSON.stringify(k));
const ws = fc.constantFrom('', '', ' ', '\n', '\r\n  ', '\t');
const rowText = fc
  .tuple(fc.array(valueText, { minLength: 6, maxLength: 6 }), fc.array(fc.tuple(stringText, valueText), { maxLength: 2 }), ws)
  .map(
    ([values, extra, space]) =>
      `{${space}${[...KEYS.map((k, i) => `${k}:${values[i]}`), ...extra.map(([k, v]) => `${k}:${v}`)].join(`,${space}`)}}`,
  );
// A cell at the limit and one past it, in characters and in bytes.
const longRow = fc
  .constantFrom('a'.repeat(CELL_LIMIT), 'a'.repeat(CELL_LIMIT + 1), 'é'.repeat(CELL_LIMIT), 'é'.repeat(20_000))
  .map((long) => `{${KEYS.slice(0, 5).join(':"x",')}:"x",${KEYS[5]}:${JSON.stringify(long)}}`);
// Now and then an element that is not a row: a scalar, a list, or a value of any shape.
const listText = fc.array(scalarText, { maxLength: 3 }).map((items) => `[${items.join(',')}]`);
const elementText = fc.oneof(
  { weight: 12, arbitrary: rowText },
  { weight: 1, arbitrary: longRow },
  { weight: 1, arbitrary: scalarText },
  { weight: 1, arbitrary: listText },
  { weight: 1, arbitrary: valueText },
);
const documentText = fc.tuple(fc.array(elementText, { maxLength: 40 }), fc.boolean(), ws).map(([elements, wrapped, space]) => {
  const list = `[${space}${elements.join(`,${space}`)}${space}]`;
  return wrapped ? `{"escola":"E","totais":[1,2],"erros":${list}}` : list;
});

/** One kind of damage at a spot: a byte changed, a range cut out, or bytes put in. */
const damage = fc.oneof(
  fc.constant(null),
  fc.record({
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    cut: fc.integer({ min: 0, max: 40 }),
    put: fc.constantFrom('', '}', '"', ',', '{', ']', 'x', '\\'),
  }),
);

function damaged(text: string, d: { at: number; cut: number; put: string } | null): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (d === null) return bytes;
  const at = Math.floor(d.at * bytes.length);
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(d.put), bytes.subarray(at + d.cut)]);
}

describe('json spans against the skim alone', () => {
  it('give the same rows or the same error, whole or damaged, in any chunks', () => {
    fc.assert(
      fc.property(documentText, damage, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), (text, d, where) => {
        const bytes = damaged(text, d);
        const cuts = where.map((w) => Math.floor(w * bytes.length));
        expect(read(bytes, cuts, true)).toEqual(read(bytes, cuts, false));
      }),
      { numRuns: 1000 },
    );
  });

  it('are what reads a return as INEP writes it, in the reader chunks, to the same rows', () => {
    const row = (i: number) =>
      `{"Registro":"30","Linha":"${i + 2}","Código na Escola":"P${i}","Campo":"Número do CPF","Mensagem":"Diverge da base da Receita Federal.","Conteúdo":"1 -- 2"}`;
    const bytes = Buffer.from(`[\n${Array.from({ length: 3000 }, (_, i) => row(i)).join(',\n')}\n]`);
    const chunks = Array.from({ length: Math.floor(bytes.length / (48 * 1024)) }, (_, k) => (k + 1) * 48 * 1024);
    const parsedInSpans = vi.spyOn(RowsCollector.prototype, 'addParsed');
    const skimmed = vi.spyOn(RowsCollector.prototype, 'addElements');
    try {
      const spans = read(bytes, chunks, true);
      const inSpans = parsedInSpans.mock.calls.reduce((sum, [elements]) => sum + elements.length, 0);
      const alone = skimmed.mock.calls.reduce((sum, [, starts]) => sum + starts.length, 0);
      // Only the elements cut by a chunk's end are skimmed.
      expect(inSpans + alone).toBe(3000);
      expect(alone).toBeLessThanOrEqual(chunks.length);
      expect(spans).toEqual(read(bytes, chunks, false));
      expect('rows' in spans && spans.rows.length).toBe(3000);
    } finally {
      parsedInSpans.mockRestore();
      skimmed.mockRestore();
    }
  });
});
