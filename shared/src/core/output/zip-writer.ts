// A zip archive (PKWARE's APPNOTE 6.3) produced as it is read, for the xlsx answers: each part
// deflated as a stream, its CRC-32 and sizes in a data descriptor after its data, the central
// directory at the end, and ZIP64 records only where a size, an offset or the count needs them.
//
// Written here rather than with yazl, which the test suite keeps as the reference
// (test/unit/zip-writer.test.ts): yazl sums CRC-32 in JavaScript (buffer-crc32) and passes every
// chunk through four stream stages; zlib's own crc32 (Node 20.15 and later) is native. See
// BENCHMARKS.md for the xlsx answer's time with each.
import { Readable, pipeline } from 'node:stream';
import * as zlib from 'node:zlib';
import { createDeflateRaw, deflateRawSync } from 'node:zlib';

export interface ZipPart {
  /** The part's name in the archive (ASCII or UTF-8). */
  readonly name: string;
  /** Its content: whole, or produced as the archive is read. */
  readonly data: Buffer | AsyncIterable<Buffer>;
}

/**
 * The parts' time unless told otherwise: the zip format's first day (1980-01-01 00:00), so that
 * the same answer is the same bytes whenever it is written (the xlsx of `censo lote --servidor` as
 * the local one's, a checksum, a cache). Spreadsheet programs do not show it.
 */
const FIXED_MTIME = new Date(1980, 0, 1);

export interface ZipOptions {
  /** The parts' modification time (default: FIXED_MTIME). */
  readonly mtime?: Date;
  /**
   * Sizes and offsets above this many bytes are written as ZIP64 (default: what 32 bits hold).
   * Lower only in tests, to exercise the ZIP64 records with small archives.
   */
  readonly zip64Above?: number;
}

/** CRC-32 of `data` continuing from `value` (zip's, IEEE 802.3). */
export type Crc32 = (data: Uint8Array, value?: number) => number;

// The table the byte-at-a-time CRC-32 reads (polynomial 0xEDB88320, reflected).
const CRC_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});

/** The same sum in JavaScript, for Node before 20.15, whose zlib has no `crc32`. */
export const crc32InJs: Crc32 = (data, value = 0) => {
  let c = ~value;
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
};

// Looked up rather than imported by name: on Node 20.6-20.14 the name does not exist.
const crc32: Crc32 = (zlib as { crc32?: Crc32 }).crc32 ?? crc32InJs;

const MAX_32 = 0xffffffff;
const MAX_16 = 0xffff;
/** General purpose flags: sizes and CRC in a data descriptor (bit 3), UTF-8 names (bit 11). */
const FLAGS = 0x0808;
const DEFLATE = 8;
const VERSION = 20;
const VERSION_ZIP64 = 45;

interface Written {
  readonly name: Buffer;
  readonly offset: number;
  crc: number;
  size: number;
  compressed: number;
}

/** The archive's bytes, part after part; each part's data is read when its turn comes. */
export async function* zipArchive(parts: AsyncIterable<ZipPart> | Iterable<ZipPart>, options: ZipOptions = {}): AsyncGenerator<Buffer> {
  const { time, date } = dosDateTime(options.mtime ?? FIXED_MTIME);
  const limit = options.zip64Above ?? MAX_32 - 1;
  const written: Written[] = [];
  let offset = 0;
  for await (const part of parts) {
    const entry: Written = { name: Buffer.from(part.name), offset, crc: 0, size: 0, compressed: 0 };
    const header = localHeader(entry.name, time, date);
    offset += header.length;
    yield header;
    if (Buffer.isBuffer(part.data)) {
      const data = deflateRawSync(part.data);
      entry.crc = crc32(part.data);
      entry.size = part.data.length;
      entry.compressed = data.length;
      offset += data.length;
      yield data;
    } else {
      for await (const data of deflated(part.data, entry)) {
        offset += data.length;
        yield data;
      }
    }
    const descriptor = dataDescriptor(entry, entry.size > limit || entry.compressed > limit);
    offset += descriptor.length;
    yield descriptor;
    written.push(entry);
  }
  const start = offset;
  for (const entry of written) {
    const header = centralHeader(entry, time, date, limit);
    offset += header.length;
    yield header;
  }
  yield endOfCentralDirectory(written.length, start, offset - start, limit);
}

/** `source` deflated, its CRC-32 and sizes summed into `entry` as it goes. */
async function* deflated(source: AsyncIterable<Buffer>, entry: Written): AsyncGenerator<Buffer> {
  async function* summed(): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      entry.crc = crc32(chunk, entry.crc);
      entry.size += chunk.length;
      yield chunk;
    }
  }
  // An error in the source destroys the deflater with it, so the loop below throws it; leaving
  // the loop early destroys the deflater, and pipeline then ends the source (its `return`).
  const deflater = pipeline(Readable.from(summed(), { objectMode: false }), createDeflateRaw(), () => {});
  try {
    for await (const data of deflater as AsyncIterable<Buffer>) {
      entry.compressed += data.length;
      yield data;
    }
  } finally {
    deflater.destroy();
  }
}

/** The fields both headers share, in the same order: version needed, flags, method, time, date. */
function writeEntryFields(header: Buffer, at: number, version: number, time: number, date: number): void {
  header.writeUInt16LE(version, at);
  header.writeUInt16LE(FLAGS, at + 2);
  header.writeUInt16LE(DEFLATE, at + 4);
  header.writeUInt16LE(time, at + 6);
  header.writeUInt16LE(date, at + 8);
}

function localHeader(name: Buffer, time: number, date: number): Buffer {
  const header = Buffer.alloc(30 + name.length);
  header.writeUInt32LE(0x04034b50, 0);
  writeEntryFields(header, 4, VERSION, time, date);
  // CRC-32 and sizes are zero here: they follow the data, in its descriptor.
  header.writeUInt16LE(name.length, 26);
  name.copy(header, 30);
  return header;
}

function dataDescriptor(entry: Written, zip64: boolean): Buffer {
  const descriptor = Buffer.alloc(zip64 ? 24 : 16);
  descriptor.writeUInt32LE(0x08074b50, 0);
  descriptor.writeUInt32LE(entry.crc, 4);
  if (zip64) {
    descriptor.writeBigUInt64LE(BigInt(entry.compressed), 8);
    descriptor.writeBigUInt64LE(BigInt(entry.size), 16);
  } else {
    descriptor.writeUInt32LE(entry.compressed, 8);
    descriptor.writeUInt32LE(entry.size, 12);
  }
  return descriptor;
}

function centralHeader(entry: Written, time: number, date: number, limit: number): Buffer {
  // The ZIP64 extra field holds, in this order, each value too large for its 32-bit field.
  const large = [entry.size, entry.compressed, entry.offset].map((value) => value > limit);
  const extra: number[] = [entry.size, entry.compressed, entry.offset].filter((_, i) => large[i]);
  const extraLength = extra.length > 0 ? 4 + 8 * extra.length : 0;
  const header = Buffer.alloc(46 + entry.name.length + extraLength);
  header.writeUInt32LE(0x02014b50, 0);
  const version = extra.length > 0 ? VERSION_ZIP64 : VERSION;
  header.writeUInt16LE(version, 4); // made by: MS-DOS attributes (none), this version
  writeEntryFields(header, 6, version, time, date);
  header.writeUInt32LE(entry.crc, 16);
  header.writeUInt32LE(large[1] ? MAX_32 : entry.compressed, 20);
  header.writeUInt32LE(large[0] ? MAX_32 : entry.size, 24);
  header.writeUInt16LE(entry.name.length, 28);
  header.writeUInt16LE(extraLength, 30);
  header.writeUInt32LE(large[2] ? MAX_32 : entry.offset, 42);
  entry.name.copy(header, 46);
  if (extra.length > 0) {
    const at = 46 + entry.name.length;
    header.writeUInt16LE(0x0001, at);
    header.writeUInt16LE(8 * extra.length, at + 2);
    extra.forEach((value, i) => header.writeBigUInt64LE(BigInt(value), at + 4 + 8 * i));
  }
  return header;
}

function endOfCentralDirectory(count: number, start: number, size: number, limit: number): Buffer {
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  const zip64 = count >= MAX_16 || start > limit || size > limit;
  end.writeUInt16LE(zip64 ? MAX_16 : count, 8);
  end.writeUInt16LE(zip64 ? MAX_16 : count, 10);
  end.writeUInt32LE(zip64 ? MAX_32 : size, 12);
  end.writeUInt32LE(zip64 ? MAX_32 : start, 16);
  if (!zip64) return end;
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4); // the record's size after this field
  record.writeUInt16LE(VERSION_ZIP64, 12);
  record.writeUInt16LE(VERSION_ZIP64, 14);
  record.writeBigUInt64LE(BigInt(count), 24);
  record.writeBigUInt64LE(BigInt(count), 32);
  record.writeBigUInt64LE(BigInt(size), 40);
  record.writeBigUInt64LE(BigInt(start), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(start + size), 8); // where the record starts
  locator.writeUInt32LE(1, 16); // disks in all
  return Buffer.concat([record, locator, end]);
}

/** MS-DOS time and date fields, in local time as zip tools show them (two-second resolution). */
function dosDateTime(at: Date): { time: number; date: number } {
  const year = Math.min(Math.max(at.getFullYear(), 1980), 2107);
  return {
    time: (at.getHours() << 11) | (at.getMinutes() << 5) | (at.getSeconds() >> 1),
    date: ((year - 1980) << 9) | ((at.getMonth() + 1) << 5) | at.getDate(),
  };
}
