// Property-based fuzzing of the return readers and the census txt parser: random mutations of
// the fixtures (byte flips, cuts, insertions, splices) never crash, hang or throw anything but
// the typed user errors (BadInputError; for the txt, the merge's TxtMismatchError too).
// Bounded runs keep the file to a few seconds.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadInputError, mergePessoas, readRetorno, TxtMismatchError, type DivergenciaLida } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { HEADER, tempPath, textRow, workbookParts, zipParts } from '../helpers/xlsx-builders.js';
import { onThisMachine } from '../helpers/deadline.js';

const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');

const JSON_BYTES = readFileSync(basico.retorno.json);
const XLSX_BYTES = readFileSync(basico.retorno.xlsx);
const TXT_BYTES = readFileSync(basico.txt);
const HANG_MS = onThisMachine(5000);

const rfDivergencia = (linha: string, codigo: string): DivergenciaLida => ({
  codigo_na_escola: codigo,
  linha,
  campo: 'Nome',
  enviado: 'A',
  correto: 'B',
  is_filiacao: false,
  chave: 'nome',
});

/** A mangled text file may no longer hold the records the return names: that is a 422, not a crash. */
function expectMismatch(err: unknown): void {
  if (!(err instanceof TxtMismatchError)) throw err;
  expect(err.message).toMatch(/^O arquivo txt não corresponde ao retorno \((linha|código) /);
}

type Mutation =
  | { kind: 'flip'; at: number; byte: number }
  | { kind: 'cut'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'dup'; at: number; length: number };

const position = fc.double({ min: 0, max: 1, noNaN: true });
const mutation: fc.Arbitrary<(b: Buffer) => Buffer> = fc
  .oneof(
    fc.record({ kind: fc.constant('flip' as const), at: position, byte: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant('cut' as const), at: position }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: position,
      bytes: fc.oneof(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.constantFrom(
          ...[
            '"',
            '{',
            '[',
            ']',
            '}',
            ',',
            '\\u00',
            '<',
            '>',
            '&',
            '&#x110000;',
            '<!DOCTYPE x>',
            '|',
            '\r',
            '\n',
            '30|',
            '\uFEFF',
            '\u00ff',
          ].map((s) => Buffer.from(s)),
        ),
      ),
    }),
    fc.record({ kind: fc.constant('delete' as const), at: position, length: fc.integer({ min: 1, max: 200 }) }),
    fc.record({ kind: fc.constant('dup' as const), at: position, length: fc.integer({ min: 1, max: 500 }) }),
  )
  .map((m: Mutation) => (b: Buffer) => {
    const at = Math.floor(m.at * b.length);
    switch (m.kind) {
      case 'flip': {
        const out = Buffer.from(b);
        if (out.length > 0) out[Math.min(at, out.length - 1)] = m.byte;
        return out;
      }
      case 'cut':
        return b.subarray(0, at);
      case 'insert':
        return Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
      case 'delete':
        return Buffer.concat([b.subarray(0, at), b.subarray(at + m.length)]);
      case 'dup':
        return Buffer.concat([b.subarray(0, at + m.length), b.subarray(at)]);
    }
  });
const mutations = fc.array(mutation, { minLength: 1, maxLength: 4 });
const apply = (base: Buffer, ms: Array<(b: Buffer) => Buffer>) => ms.reduce((b, m) => m(b), base);

/** Resolves when `work` settles; fails on a hang or on any error other than BadInputError. */
async function onlyBadInput(work: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hung for ${HANG_MS} ms`)), HANG_MS);
  });
  try {
    await Promise.race([work(), hang]);
  } catch (err) {
    if (!(err instanceof BadInputError)) throw err;
    expect(err.message).toMatch(/^Arquivo (retorno|txt) ilegível: /);
  } finally {
    clearTimeout(timer);
  }
}

async function readAll(path: string, format: 'json' | 'xlsx'): Promise<number> {
  let n = 0;
  for await (const _row of readRetorno({ path, format })) n++;
  return n;
}

async function fuzzFile(ext: string, base: Buffer, read: (path: string) => Promise<unknown>, numRuns: number) {
  const path = await tempPath(ext);
  await fc.assert(
    fc.asyncProperty(mutations, async (ms) => {
      await writeFile(path, apply(base, ms));
      await onlyBadInput(() => read(path));
    }),
    { numRuns, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
  );
}

describe('fuzz', () => {
  it(
    'JSON return reader',
    async () => {
      await fuzzFile('json', JSON_BYTES, (p) => readAll(p, 'json'), 1000);
    },
    onThisMachine(30_000),
  );

  it(
    'xlsx return reader: mutated zip bytes',
    async () => {
      await fuzzFile('xlsx', XLSX_BYTES, (p) => readAll(p, 'xlsx'), 500);
    },
    onThisMachine(30_000),
  );

  it(
    'xlsx return reader: mutated sheet XML inside a valid zip',
    async () => {
      const parts = workbookParts({
        sheets: [{ rows: textRow(1, [...HEADER]) + textRow(2, ['30', '2', 'ALU0001', 'CPF', 'Receita Federal', '1 -- 2']) }],
        sharedStrings: ['a', 'b'],
      });
      const sheet = Buffer.from(String(parts['xl/worksheets/sheet1.xml']));
      const strings = Buffer.from(String(parts['xl/sharedStrings.xml']));
      await fc.assert(
        fc.asyncProperty(mutations, fc.boolean(), async (ms, inStrings) => {
          const mutated = {
            ...parts,
            [inStrings ? 'xl/sharedStrings.xml' : 'xl/worksheets/sheet1.xml']: apply(inStrings ? strings : sheet, ms),
          };
          const path = await zipParts(mutated);
          await onlyBadInput(() => readAll(path, 'xlsx'));
        }),
        { numRuns: 300 },
      );
    },
    onThisMachine(30_000),
  );

  it(
    'census txt parser',
    async () => {
      // The merge's both passes over a mangled file: persons, a mismatch (422), or a clean 400.
      const divergencias = [...Array.from({ length: 12 }, (_, i) => rfDivergencia(String(i + 1), '')), rfDivergencia('', 'ALU0001')];
      await fuzzFile('txt', TXT_BYTES, (p) => mergePessoas(divergencias, p).catch((err: unknown) => expectMismatch(err)), 800);
    },
    onThisMachine(30_000),
  );
});
