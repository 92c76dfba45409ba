// A small xlsx (up to 1 MiB) is read whole and its parts inflated in one call; a larger one is
// streamed from the disk (core/retorno/xlsx/zip.ts). The same workbook with a 1.2 MiB part of
// noise added (a part the reader never opens) takes the streaming path: both must give the same
// rows, or the same error, for every good workbook and for every damage done to the sheet's
// compressed bytes or to the sizes its directory entries declare.
import { randomBytes } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import fc from 'fast-check';
import yauzl from 'yauzl';
import { describe, expect, it } from 'vitest';
import { HEADER, readRows, textRow, workbookParts, zipParts, type Part } from '../helpers/xlsx-builders.js';

const WHOLE_FILE_BYTES = 1024 * 1024;
const NOISE = randomBytes(WHOLE_FILE_BYTES + 200 * 1024);
const SHEET = 'xl/worksheets/sheet1.xml';

/** The rows readRetorno gives, or its error's class and message. */
async function outcome(path: string): Promise<unknown> {
  try {
    return { rows: await readRows(path, 'xlsx') };
  } catch (err) {
    return { error: (err as Error).constructor.name, message: (err as Error).message };
  }
}

/** The same parts zipped twice: small (read whole), and with the noise part last (streamed). */
async function bothWays(parts: Record<string, Part>, compress = true): Promise<{ small: string; large: string }> {
  const small = await zipParts(parts, { compress });
  const large = await zipParts({ ...parts, 'docProps/noise.bin': NOISE }, { compress });
  expect((await stat(small)).size).toBeLessThanOrEqual(WHOLE_FILE_BYTES);
  expect((await stat(large)).size).toBeGreaterThan(WHOLE_FILE_BYTES);
  return { small, large };
}

interface Located {
  /** Where the part's compressed bytes start in the file. */
  readonly dataStart: number;
  readonly compressedSize: number;
  /** Where the central directory's record of the part starts. */
  readonly centralRecord: number;
}

async function locate(path: string, name: string): Promise<Located> {
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  try {
    for (;;) {
      const entry = await new Promise<yauzl.Entry | null>((resolve, reject) => {
        zip
          .once('entry', resolve)
          .once('end', () => resolve(null))
          .once('error', reject);
        zip.readEntry();
      });
      if (entry === null) throw new Error(`${name} not in ${path}`);
      if (entry.fileName !== name) continue;
      const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
      // The name's last occurrence is in the central directory, 46 bytes into the part's record.
      const centralRecord = (await readFile(path)).lastIndexOf(name) - 46;
      return { dataStart: fileDataStart, compressedSize: entry.compressedSize, centralRecord };
    }
  } finally {
    zip.close();
  }
}

async function patch(path: string, change: (bytes: Buffer, sheet: Located) => void): Promise<void> {
  const sheet = await locate(path, SHEET);
  const bytes = await readFile(path);
  change(bytes, sheet);
  await writeFile(path, bytes);
}

function sheetParts(rows: number, seed: number): Record<string, Part> {
  const body = Array.from({ length: rows }, (_, i) =>
    textRow(i + 2, [
      '30',
      String(i),
      `P${(i * 7919 + seed) % 100_003}`,
      'Número do CPF',
      'Diverge da base da Receita Federal.',
      `${i} -- ${seed}`,
    ]),
  ).join('');
  return workbookParts({ sheets: [{ rows: textRow(1, [...HEADER]) + body }] });
}

describe('xlsx read whole or streamed', () => {
  it('gives the same rows either way, deflated or stored', async () => {
    for (const [rows, compress] of [
      [1, true],
      [3000, true],
      [200, false],
    ] as const) {
      const { small, large } = await bothWays(sheetParts(rows, rows), compress);
      const expected = await outcome(small);
      expect(expected).toMatchObject({ rows: { length: rows } });
      expect(await outcome(large)).toEqual(expected);
    }
  });

  it('fails the same way for damaged sheet data and for sizes that lie', async () => {
    const parts = sheetParts(3000, 7);
    const damage = fc.oneof(
      // Bytes of the deflated sheet overwritten.
      fc.record({
        kind: fc.constant('data' as const),
        at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        length: fc.integer({ min: 1, max: 64 }),
        value: fc.integer({ min: 0, max: 255 }),
      }),
      // The central directory's uncompressed size of the sheet, off by a little or a lot.
      fc.record({ kind: fc.constant('size' as const), delta: fc.constantFrom(-100_000, -1, 1, 65_536, 100_000_000, 500_000_000) }),
    );
    await fc.assert(
      fc.asyncProperty(damage, async (d) => {
        const { small, large } = await bothWays(parts);
        for (const path of [small, large]) {
          await patch(path, (bytes, sheet) => {
            if (d.kind === 'data') {
              const start = sheet.dataStart + Math.floor(d.at * sheet.compressedSize);
              bytes.fill(d.value, start, Math.min(start + d.length, sheet.dataStart + sheet.compressedSize));
            } else {
              const field = sheet.centralRecord + 24;
              bytes.writeUInt32LE(Math.max(0, Math.min(0xfffffffe, bytes.readUInt32LE(field) + d.delta)), field);
            }
          });
        }
        expect(await outcome(large)).toEqual(await outcome(small));
      }),
      { numRuns: 40 },
    );
  });
});
