// The xlsx answers' zip writer (core/output/zip-writer.ts) against yazl, the library it replaced:
// the same parts, whole or streamed, must come back the same from either archive, read by yauzl
// and by Python's zipfile (which also checks every part's CRC-32), ZIP64 records included.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { promisify } from 'node:util';
import fc from 'fast-check';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { crc32 } from 'node:zlib';
import { crc32InJs, zipArchive, type ZipPart } from '@censo/shared';

const run = promisify(execFile);
let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-zip-writer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface PartSpec {
  readonly name: string;
  /** Whole (one buffer) or streamed in these chunks (some may be empty). */
  readonly chunks: readonly Uint8Array[];
  readonly streamed: boolean;
}

function parts(specs: readonly PartSpec[]): ZipPart[] {
  return specs.map((spec) => ({
    name: spec.name,
    data: spec.streamed
      ? (async function* () {
          for (const chunk of spec.chunks) yield Buffer.from(chunk);
        })()
      : Buffer.concat(spec.chunks),
  }));
}

async function ours(specs: readonly PartSpec[], zip64Above?: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of zipArchive(parts(specs), zip64Above === undefined ? {} : { zip64Above })) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function theirs(specs: readonly PartSpec[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const spec of specs) zip.addBuffer(Buffer.concat(spec.chunks), spec.name);
  zip.end();
  return buffer(zip.outputStream);
}

/** Every entry's name and content, as yauzl reads them (sizes checked against the directory). */
async function entries(bytes: Buffer): Promise<[string, string][]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, z) =>
      err ? reject(err) : resolve(z),
    ),
  );
  const found: [string, string][] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        buffer(stream).then((data) => {
          found.push([entry.fileName, data.toString('hex')]);
          zip.readEntry();
        }, reject);
      });
    });
    zip.once('end', () => resolve());
    zip.once('error', reject);
    zip.readEntry();
  });
  return found;
}

/** Python's zipfile: the names and contents' lengths, after testzip() checked every CRC-32. */
async function pythonReads(bytes: Buffer): Promise<[string, number][]> {
  const file = path.join(dir, `z${n++}.zip`);
  await writeFile(file, bytes);
  const script =
    'import json, sys, zipfile\n' +
    'z = zipfile.ZipFile(sys.argv[1])\n' +
    'bad = z.testzip()\n' +
    'assert bad is None, bad\n' +
    'print(json.dumps([[i.filename, len(z.read(i))] for i in z.infolist()]))\n';
  const { stdout } = await run('python3', ['-c', script, file]);
  return JSON.parse(stdout) as [string, number][];
}

const partSpec = fc.record({
  name: fc.stringMatching(/^[a-zA-Z0-9_]{1,8}(\/[a-zA-Z0-9_]{1,8}){0,2}(\.xml)?$/),
  chunks: fc.array(fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.constant(new Uint8Array(0))), { maxLength: 5 }),
  streamed: fc.boolean(),
});
const archive = fc.uniqueArray(partSpec, { maxLength: 6, selector: (p) => p.name });

describe('zipArchive', () => {
  it('writes the same parts as the same bytes at any time: every part dated 1980-01-01 00:00', async () => {
    const specs: PartSpec[] = [
      { name: 'xl/worksheets/sheet1.xml', chunks: [Buffer.from('<worksheet/>')], streamed: true },
      { name: '[Content_Types].xml', chunks: [Buffer.from('<Types/>')], streamed: false },
    ];
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(new Date(2026, 10, 26, 9, 15, 42));
      const morning = await ours(specs);
      vi.setSystemTime(new Date(2027, 2, 3, 18, 0, 8));
      expect((await ours(specs)).equals(morning)).toBe(true);
      // The first local header's DOS time and date (offsets 10 and 12): 00:00:00, 1980-01-01.
      expect([morning.readUInt32LE(0), morning.readUInt16LE(10), morning.readUInt16LE(12)]).toEqual([0x04034b50, 0, (1 << 5) | 1]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('holds what yazl holds for the same parts, whole or streamed', async () => {
    await fc.assert(
      fc.asyncProperty(archive, async (specs) => {
        expect(await entries(await ours(specs))).toEqual(await entries(await theirs(specs)));
      }),
      { numRuns: 200 },
    );
  });

  it('passes Python zipfile CRC checks, with and without ZIP64 records', async () => {
    await fc.assert(
      fc.asyncProperty(archive, fc.constantFrom(undefined, 0, 50, 400), async (specs, zip64Above) => {
        const bytes = await ours(specs, zip64Above);
        const expected = specs.map((s) => [s.name, Buffer.concat(s.chunks).length]);
        expect(await pythonReads(bytes)).toEqual(expected);
        expect(await entries(bytes)).toEqual(await entries(await theirs(specs)));
      }),
      { numRuns: 12 },
    );
  });

  it('writes ZIP64 records only when asked by the sizes, and a large streamed part compresses', async () => {
    const text = Buffer.from('<row><c><is><t>MARIA DA SILVA</t></is></c></row>'.repeat(20_000));
    const specs: PartSpec[] = [{ name: 'xl/worksheets/sheet1.xml', chunks: [text.subarray(0, 7), text.subarray(7)], streamed: true }];
    const plain = await ours(specs);
    expect(plain.indexOf(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(-1); // no ZIP64 end record
    expect(plain.length).toBeLessThan(text.length / 20);
    const forced = await ours(specs, 100);
    expect(forced.indexOf(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBeGreaterThan(0);
    expect(await entries(forced)).toEqual(await entries(plain));
  });

  it('stops a streamed part when the reader stops, and passes on its error', async () => {
    let returned = false;
    async function* endless(): AsyncGenerator<Buffer> {
      try {
        for (let i = 0; ; i++) yield Buffer.from(`chunk ${i} `.repeat(1000));
      } finally {
        returned = true;
      }
    }
    let read = 0;
    for await (const chunk of zipArchive([{ name: 'a.xml', data: endless() }])) {
      read += chunk.length;
      if (read > 100_000) break;
    }
    await expect.poll(() => returned).toBe(true);

    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('x'.repeat(10_000));
      throw new Error('the rows failed');
    }
    await expect(
      (async () => {
        for await (const _chunk of zipArchive([{ name: 'a.xml', data: failing() }]));
      })(),
    ).rejects.toThrow('the rows failed');
  });
});

describe('crc32InJs (Node before 20.15)', () => {
  it("sums what zlib's crc32 sums, also continued chunk by chunk", () => {
    expect(crc32InJs(Buffer.from('123456789'))).toBe(0xcbf43926); // the check value of CRC-32/ISO-HDLC
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.nat(2000), (bytes, cut) => {
        const at = Math.min(cut, bytes.length);
        expect(crc32InJs(bytes)).toBe(crc32(bytes));
        expect(crc32InJs(bytes.subarray(at), crc32InJs(bytes.subarray(0, at)))).toBe(crc32(bytes));
      }),
      { numRuns: 500 },
    );
  });
});
