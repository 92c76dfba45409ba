// `lote --servidor` rewrites the batch's combined CSV as `censo lote`'s (cli/src/combined-csv.ts):
// checked against the writer itself on values that need quoting (commas, doubled quotes, CR/LF,
// formula starts, non-ASCII) and against every way the answer can be cut into chunks.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvLine } from '@censo/shared';
import { withoutSecondField } from '../../cli/src/combined-csv.js';

const HEADER = csvLine(['arquivo', 'a', 'b']);

async function rewrite(bytes: Buffer, cuts: readonly number[]): Promise<{ text: string; records: number }> {
  const chunks: Buffer[] = [];
  let at = 0;
  for (const cut of [...cuts].sort((x, y) => x - y)) {
    chunks.push(bytes.subarray(at, Math.max(at, cut)));
    at = Math.max(at, cut);
  }
  chunks.push(bytes.subarray(at));
  const counted = { records: 0 };
  const out: Buffer[] = [];
  for await (const chunk of withoutSecondField(chunks, HEADER, counted)) out.push(chunk);
  return { text: Buffer.concat(out).toString('utf8'), records: counted.records };
}

const value = fc.oneof(
  fc.string(),
  fc.constantFrom('', ',', '"', '""', '\r\n', '\n', 'a,b', '=SOMA(1)', '-1', 'São Paulo', 'x"y', '"\n"', 'ção,"\r'),
  fc.string({ unit: fc.constantFrom('a', ',', '"', '\n', '\r', 'ã', ' ') }),
);
const record = fc.tuple(value, value, value, value);

describe('withoutSecondField', () => {
  it('is the writer’s own CSV without the second column, however the answer is cut', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 8 }), async (records, cuts) => {
        const combined = Buffer.from(csvLine(['referencia', 'arquivo', 'a', 'b']) + records.map((r) => csvLine(r)).join(''), 'utf8');
        const expected = HEADER + records.map(([ref, , a, b]) => csvLine([ref, a, b])).join('');
        const got = await rewrite(
          combined,
          cuts.map((c) => c % (combined.length + 1)),
        );
        expect(got).toEqual({ text: expected, records: records.length });
      }),
      { numRuns: 300 },
    );
  });

  it('an answer that stops inside a record is an error, not a shorter file', async () => {
    const combined = Buffer.from(csvLine(['referencia', 'arquivo', 'a', 'b']) + csvLine(['r', 'x.xlsx', '"quoted', 'b']), 'utf8');
    await expect(rewrite(combined.subarray(0, combined.length - 4), [])).rejects.toThrow(
      'a resposta do servidor terminou no meio de uma linha do CSV',
    );
  });
});
