// The zip layer of the xlsx reader: the central directory is listed once, then parts are
// inflated one at a time as streams of text. Every inflated byte is counted against one budget
// for the whole file, so a zip bomb is refused while streaming, never buffered (SPEC §5).
//
// A small file (a school's return, tens of KiB) is read whole, synchronously, and its parts
// inflated synchronously: the readers only run on job threads, where blocking holds up nothing
// else, and every asynchronous read or inflate is a round trip through libuv's thread pool, which
// all the process's threads share. With two job threads on two cores each such file took about
// twenty of them, and a thread spent a third of `censo lote` idle, waiting for its turn.
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { Readable, type Transform } from 'node:stream';
import { createInflateRaw, inflateRawSync } from 'node:zlib';
import { createRequire } from 'node:module';
import type * as Yauzl from 'yauzl';
import { badInput } from '../../errors.js';

// Loaded with require, not import: importing a CommonJS package from ESM makes Node scan its
// source for export names (cjs-module-lexer), in every job thread, and V8 then optimizes that
// scanner in each one: about a third of a short `censo lote` run's background compilation
// (--trace-opt). See runtime/job-thread.ts.
const yauzl = createRequire(import.meta.url)('yauzl') as typeof Yauzl;

/** SPEC §5: decompressed content over 400 MB makes the file unreadable. */
export const MAX_INFLATED_BYTES = 400 * 1024 * 1024;
// An xlsx holds tens of parts; a directory of hundreds of thousands is only there to exhaust memory.
const MAX_ENTRIES = 50_000;
const INFLATE_CHUNK = 64 * 1024;
/** Reads of a part's compressed bytes: each feeds zlib about ten output chunks. */
const RAW_CHUNK = 256 * 1024;
/** Files up to this size are read whole (see the top of this file). */
export const WHOLE_FILE_BYTES = 1024 * 1024;
/**
 * A part of a file read whole is inflated in one call when it declares at most this much: it is
 * then held at once (the streaming path holds a chunk), so the bound keeps a thread's memory small.
 */
const WHOLE_PART_BYTES = 16 * 1024 * 1024;

export const NOT_A_ZIP = 'não é um arquivo xlsx (zip) válido.';
export const TOO_BIG = 'conteúdo descompactado excede 400 MB.';

/** A chunk of a part's text. */
export interface TextChunk {
  readonly text: string;
  /**
   * The chunk's bytes when byte i is character i, for scanners that read bytes faster than
   * characters; null otherwise. Valid until the next chunk is asked for. That is a chunk of
   * ASCII, or one whose other bytes are invalid UTF-8 decoded one for one as U+FFFD: a scanner
   * that only compares bytes with ASCII codes finds neither equal to any.
   */
  readonly ascii: Uint8Array | null;
}

export class ZipArchive {
  private inflated = 0;
  private readonly open = new Set<Readable>();

  private constructor(
    // Where parts' compressed bytes come from: the whole file, or the same file opened once more
    // for reading them in large blocks.
    private readonly source: { readonly bytes: Buffer } | { readonly file: FileHandle },
    private readonly zip: Yauzl.ZipFile,
    // OPC part names are case-insensitive, so lookups go through lower case.
    private readonly entries: ReadonlyMap<string, Yauzl.Entry>,
  ) {}

  static async open(path: string): Promise<ZipArchive> {
    const bytes = readWhole(path);
    const options = { lazyEntries: true, autoClose: false, validateEntrySizes: true };
    const zip = await new Promise<Yauzl.ZipFile>((resolve, reject) => {
      const done = (err: Error | null, file: Yauzl.ZipFile) => (err ? reject(err) : resolve(file));
      if (bytes) yauzl.fromBuffer(bytes, options, done);
      else yauzl.open(path, options, done);
    });
    try {
      const entries = await listEntries(zip);
      // yauzl reports late errors as events; without a listener they would crash the process.
      zip.on('error', () => {});
      return new ZipArchive(bytes ? { bytes } : { file: await open(path, 'r') }, zip, entries);
    } catch (err) {
      zip.close();
      throw err;
    }
  }

  has(name: string): boolean {
    return this.entries.has(name.toLowerCase());
  }

  /** Declared (and, with validateEntrySizes, enforced) inflated size of a part; 0 when absent. */
  size(name: string): number {
    return this.entries.get(name.toLowerCase())?.uncompressedSize ?? 0;
  }

  /** Whether inflating these parts would pass the budget: refuses a bomb before reading it. */
  assertBudget(names: Iterable<string>): void {
    let total = this.inflated;
    for (const name of new Set([...names].map((n) => n.toLowerCase()))) total += this.size(name);
    if (total > MAX_INFLATED_BYTES) throw badInput.unreadableRetorno(TOO_BIG);
  }

  /** The part's text, chunk by chunk: see chunks(). */
  async *text(name: string, signal?: AbortSignal): AsyncGenerator<string, void, undefined> {
    for await (const chunk of this.chunks(name, signal)) yield chunk.text;
  }

  /**
   * The part's text, chunk by chunk (UTF-8 decoded across chunk boundaries). Breaking out of
   * the loop destroys the inflate stream.
   *
   * Each chunk ends just after a `>` when it holds one: the bytes after it wait for the next
   * chunk. A scanner then rarely has an unfinished tag to prepend to the next chunk, so it works
   * on the flat strings the decoder makes instead of concatenations, whose every character read
   * costs more (a sheet reads tens of millions of them). `>` is ASCII, so the cut never splits a
   * UTF-8 sequence.
   */
  async *chunks(name: string, signal?: AbortSignal): AsyncGenerator<TextChunk, void, undefined> {
    const entry = this.entries.get(name.toLowerCase());
    if (!entry) return;
    if (entry.isEncrypted() || (entry.compressionMethod !== 0 && entry.compressionMethod !== 8)) {
      throw badInput.unreadableRetorno(NOT_A_ZIP);
    }
    // The compressed bytes are read from the file directly, in large blocks (yauzl checks the
    // local header and that the data lies within the file): yauzl's stream reads 16 KiB at a
    // time through two more transforms, ~1,600 reads and their stream hops for x25's sheet.
    // Inflated here with large output chunks: far fewer thread-pool round trips and hops.
    const { fileDataStart } = await this.zip.readLocalFileHeaderPromise(entry, { minimal: true });
    let stream: Readable | Iterable<Buffer>;
    if ('bytes' in this.source) {
      // yauzl has checked that the data lies within the file.
      const raw = this.source.bytes.subarray(fileDataStart, fileDataStart + entry.compressedSize);
      const whole = entry.compressionMethod === 8 ? this.inflatedWhole(entry, raw) : raw;
      // A stored part in the blocks readBlocks would yield; an inflated one as the stream would.
      if (whole !== null) stream = slices(whole, entry.compressionMethod === 8 ? INFLATE_CHUNK : RAW_CHUNK);
      else {
        const inflate = createInflateRaw({ chunkSize: INFLATE_CHUNK });
        stream = Readable.from([raw], { objectMode: false }).pipe(inflate);
      }
    } else if (entry.compressionMethod === 8) {
      const { file } = this.source;
      const inflate = createInflateRaw({ chunkSize: INFLATE_CHUNK });
      pump(file, fileDataStart, entry.compressedSize, inflate).catch((err: unknown) => inflate.destroy(err as Error));
      stream = inflate;
    } else {
      stream = Readable.from(readBlocks(this.source.file, fileDataStart, entry.compressedSize), { objectMode: false });
    }
    if (stream instanceof Readable) this.open.add(stream);
    const decoder = new StringDecoder('utf8');
    let bytes = 0;
    // The bytes after the last '>' wait at the start of `spare`, one buffer reused for the whole
    // part: concatenating a fresh buffer per chunk doubled the off-heap churn of inflating.
    let spare: Buffer | null = null;
    let carried = 0;
    // Whether the decoder holds no bytes of an unfinished character (true after every cut).
    let clean = true;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer> | Iterable<Buffer>) {
        signal?.throwIfAborted();
        bytes += chunk.length;
        this.inflated += chunk.length;
        if (this.inflated > MAX_INFLATED_BYTES) throw badInput.unreadableRetorno(TOO_BIG);
        // The central directory's size is what the budget check trusted: hold the data to it.
        if (bytes > entry.uncompressedSize) throw badInput.unreadableRetorno(NOT_A_ZIP);
        let data = chunk;
        if (carried > 0) {
          // spare holds the carried bytes; it grows only for a part's rare chunk larger than usual.
          if (spare!.length < carried + chunk.length) {
            const grown = Buffer.allocUnsafe(carried + chunk.length);
            spare!.copy(grown, 0, 0, carried);
            spare = grown;
          }
          chunk.copy(spare!, carried);
          data = spare!.subarray(0, carried + chunk.length);
        }
        const cut = data.lastIndexOf(62 /* > */) + 1;
        const head = cut > 0 ? data.subarray(0, cut) : data;
        const text = decoder.write(head);
        // As many characters as bytes, from a clean start: byte i is character i (see TextChunk).
        if (text.length > 0) yield { text, ascii: clean && text.length === head.length ? head : null };
        clean = cut > 0;
        // Moved only now: head may be a view of spare, which the consumer has finished with.
        carried = cut > 0 ? data.length - cut : 0;
        if (carried > 0) {
          if (spare === null || spare.length < carried) spare = Buffer.allocUnsafe(Math.max(2 * INFLATE_CHUNK, carried));
          // Overlapping copies are safe (moving the tail to the front of spare itself).
          data.copy(spare, 0, cut);
        }
      }
      if (bytes !== entry.uncompressedSize) throw badInput.unreadableRetorno(NOT_A_ZIP);
      if (carried > 0) {
        const text = decoder.write(spare!.subarray(0, carried));
        if (text.length > 0) yield { text, ascii: null };
      }
      const tail = decoder.end();
      if (tail.length > 0) yield { text: tail, ascii: null };
    } finally {
      if (stream instanceof Readable) {
        this.open.delete(stream);
        stream.destroy();
      }
    }
  }

  /**
   * A part of a file read whole, inflated in one call; null when it is not one the streaming
   * path would read without an error: then that path reads it, so a damaged or crafted part
   * fails exactly as it always has (the same error, after the same chunks).
   */
  private inflatedWhole(entry: Yauzl.Entry, raw: Buffer): Buffer | null {
    const declared = entry.uncompressedSize;
    // Within the budget with a chunk to spare: the streaming path could not have refused it.
    if (declared > WHOLE_PART_BYTES || this.inflated + declared + INFLATE_CHUNK > MAX_INFLATED_BYTES) return null;
    try {
      // One byte over the declared size is enough to know it lies.
      const whole = inflateRawSync(raw, { maxOutputLength: declared + 1 });
      return whole.length === declared ? whole : null;
    } catch {
      return null;
    }
  }

  close(): void {
    for (const stream of this.open) stream.destroy();
    this.open.clear();
    this.zip.close();
    // Waits for reads under way on the thread pool; nothing is left to report by then.
    if ('file' in this.source) this.source.file.close().catch(() => {});
  }
}

/**
 * A regular file of at most WHOLE_FILE_BYTES, read whole; null for anything else (larger, or not
 * a regular file), which the streaming path reads (and, if it must, fails) as always.
 */
function readWhole(path: string): Buffer | null {
  // Stat first: opening a FIFO would block the thread until a writer came.
  const named = statSync(path, { throwIfNoEntry: false });
  if (named === undefined || !named.isFile() || named.size > WHOLE_FILE_BYTES) return null;
  const fd = openSync(path, 'r');
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > WHOLE_FILE_BYTES) return null;
    const bytes = Buffer.allocUnsafe(info.size);
    let at = 0;
    while (at < bytes.length) {
      const read = readSync(fd, bytes, at, bytes.length - at, at);
      if (read === 0) break; // it shrank meanwhile: yauzl reads what is there
      at += read;
    }
    return at === bytes.length ? bytes : bytes.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

/** Views of `bytes`, `size` at a time (what an inflate stream with that chunk size yields). */
function* slices(bytes: Buffer, size: number): Generator<Buffer, void, undefined> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/**
 * Feeds bytes [start, start + length) of the file to zlib, RAW_CHUNK at a time, from two
 * buffers used in turn: a buffer is read into again once zlib has finished with it (the write
 * callback), while zlib inflates the other. A fresh buffer per block left peak RSS ~12 MiB
 * higher (the allocator kept them). Reads are by position on the archive's own handle (a file
 * stream would close the descriptor when destroyed, and the next part needs it).
 */
async function pump(file: FileHandle, start: number, length: number, sink: Transform): Promise<void> {
  const buffers = [Buffer.allocUnsafe(Math.min(RAW_CHUNK, length)), Buffer.allocUnsafe(Math.min(RAW_CHUNK, length))];
  const consumed: Promise<unknown>[] = [Promise.resolve(), Promise.resolve()];
  const end = start + length;
  let k = 0;
  for (let at = start; at < end; k ^= 1) {
    await consumed[k];
    if (sink.destroyed) return;
    const size = Math.min(RAW_CHUNK, end - at);
    const { bytesRead } = await file.read(buffers[k]!, 0, size, at);
    if (bytesRead === 0) throw badInput.unreadableRetorno(NOT_A_ZIP); // the file shrank
    at += bytesRead;
    if (sink.destroyed) return;
    const block = buffers[k]!.subarray(0, bytesRead);
    consumed[k] = new Promise((resolve) => sink.write(block, resolve));
  }
  if (!sink.destroyed) sink.end();
}

/** Bytes [start, start + length) of the file, RAW_CHUNK at a time (a stored part's text). */
async function* readBlocks(file: FileHandle, start: number, length: number): AsyncGenerator<Buffer, void, undefined> {
  const end = start + length;
  for (let at = start; at < end;) {
    const size = Math.min(RAW_CHUNK, end - at);
    const { buffer, bytesRead } = await file.read(Buffer.allocUnsafe(size), 0, size, at);
    if (bytesRead === 0) throw badInput.unreadableRetorno(NOT_A_ZIP); // the file shrank
    at += bytesRead;
    yield bytesRead === size ? buffer : buffer.subarray(0, bytesRead);
  }
}

function listEntries(zip: Yauzl.ZipFile): Promise<Map<string, Yauzl.Entry>> {
  return new Promise((resolve, reject) => {
    const entries = new Map<string, Yauzl.Entry>();
    zip.on('entry', (entry: Yauzl.Entry) => {
      if (entries.size >= MAX_ENTRIES) {
        zip.removeAllListeners('entry');
        reject(badInput.unreadableRetorno('o arquivo zip tem partes demais.'));
        return;
      }
      // Directories and duplicates: the first entry of a name is the one a zip reader uses.
      const key = entry.fileName.toLowerCase();
      if (!key.endsWith('/') && !entries.has(key)) entries.set(key, entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve(entries));
    zip.once('error', reject);
    zip.readEntry();
  });
}
