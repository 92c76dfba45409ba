// The page's mirror of the corrected file's writing rules (services/api/web/inep-values.js, plain
// browser JavaScript that cannot import the core) against the core's own (SPEC §3.4): every code
// point alone, and random names, CPFs, ids and dates, must come out the same. A page that drifted
// from the core would show in the persons table a value the corrected file does not hold.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inepCpf, inepData, inepId, inepNome } from '@censo/shared';

type Writer = (value: string) => string | null;
interface PageWriters {
  inepNome: Writer;
  inepCpf: Writer;
  inepId: Writer;
  inepData: Writer;
  WRITERS: Record<string, Writer>;
}
// A path held in a variable: the module is the page's JavaScript, outside the typed projects.
const PAGE_MODULE = '../../services/api/web/inep-values.js';
const page = (await import(PAGE_MODULE)) as PageWriters;

/** Every Unicode scalar value (surrogates are not text on their own). */
function* codePoints(): Generator<string> {
  for (let c = 0; c < 0x110000; c++) if (c < 0xd800 || c > 0xdfff) yield String.fromCodePoint(c);
}

describe("the page's INEP writing rules", () => {
  it('write every code point of a name exactly as the core does', () => {
    const differ: string[] = [];
    for (const c of codePoints()) {
      // Between letters, so a character the core turns into letters, spaces or nothing shows which.
      const name = `A${c}B ${c}`;
      if (page.inepNome(name) !== inepNome(name)) differ.push(`U+${c.codePointAt(0)!.toString(16)}`);
    }
    expect(differ).toEqual([]);
  });

  it('agree with the core on random names, CPFs, ids and dates', () => {
    const pieces = fc.constantFrom(
      ...['a', 'Z', ' ', '  ', '-', '.', '/', "'", 'é', 'Ç', 'ã', 'Ø', 'ß', 'Æ', 'œ', 'ı', 'ǅ', 'ﬁ', 'Ａ', 'Ω', '😀', '\t', '\u00a0'],
      ...['0', '1', '5', '9', '19', '2014', '02', '29', '31', '-', 'T', '12:00'],
    );
    const value = fc.array(pieces, { maxLength: 40 }).map((parts) => parts.join(''));
    const long = fc.string({ unit: fc.constantFrom('A', 'b', ' ', 'É', '-'), minLength: 90, maxLength: 130 });
    fc.assert(
      fc.property(fc.oneof(value, long), (text) => {
        expect([page.inepNome(text), page.inepCpf(text), page.inepId(text), page.inepData(text)]).toEqual([
          inepNome(text),
          inepCpf(text),
          inepId(text),
          inepData(text),
        ]);
      }),
      { numRuns: 5000, seed: 36 },
    );
    const digits = fc.array(fc.constantFrom('0', '7', '.', '-', '/', ' ', 'x'), { minLength: 9, maxLength: 16 }).map((d) => d.join(''));
    const dates = fc
      .tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 14 }), fc.integer({ min: 1899, max: 2101 }), fc.nat(3))
      .map(([d, m, y, shape]) => {
        const dd = String(d).padStart(2, '0');
        const mm = String(m).padStart(2, '0');
        return [`${d}/${m}/${y}`, `${dd}${mm}${y}`, `${y}-${mm}-${dd}`, `${y}-${mm}-${dd}T23:00:00-03:00`][shape]!;
      });
    fc.assert(
      fc.property(digits, dates, (number, date) => {
        expect([page.inepCpf(number), page.inepId(number), page.inepData(date)]).toEqual([inepCpf(number), inepId(number), inepData(date)]);
      }),
      { numRuns: 5000, seed: 36 },
    );
  });

  it('name the writer of each field the corrected file rewrites', () => {
    expect(Object.keys(page.WRITERS).sort()).toEqual(['cpf', 'data_nascimento', 'inep', 'nome']);
    expect(page.WRITERS.nome!(' joão  da silva ')).toBe('JOAO DA SILVA');
    expect(page.WRITERS.cpf!('153.509.460-57')).toBe('15350946057');
    expect(page.WRITERS.inep!('1234567890')).toBeNull();
    expect(page.WRITERS.data_nascimento!('31/02/2014')).toBeNull();
  });
});
