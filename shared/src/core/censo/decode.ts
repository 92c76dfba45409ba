// Census text decoding (SPEC §1.1): UTF-16 (LE/BE) when the file starts with a UTF-16 BOM or its
// first line has NUL in every other byte, as Windows editors save "Unicode" text; else UTF-8
// when the whole file is valid UTF-8 (a BOM is dropped), otherwise WHATWG windows-1252. Validity is only known at the end of the file, so the file is
// read once with a fatal streaming UTF-8 decoder and, at the first invalid sequence, read again
// from the start as windows-1252. Consumers see that as a `restart` event and drop what they
// built so far: a windows-1252 file can begin with bytes that are also valid UTF-8 (`Ã©`), so
// the text yielded before the restart may be wrong, not just incomplete.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { badInput } from '../errors.js';

export type CensoEncoding = 'utf-8' | 'windows-1252' | 'utf-16le' | 'utf-16be';

/** Decoders that need no detection once chosen. */
type FixedEncoding = Exclude<CensoEncoding, 'utf-8'>;

export type DecodeEvent =
  | { readonly type: 'text'; readonly text: string }
  /**
   * The encoding is not (or no longer) UTF-8: drop what was built from earlier text events and
   * start again from line 1. Announced first, before any text, for a UTF-16 file.
   */
  | { readonly type: 'restart'; readonly encoding: FixedEncoding };

export interface DecodeOptions {
  readonly signal?: AbortSignal;
  /** Decode as this, without detection: a second pass over a file whose encoding is known. */
  readonly encoding?: CensoEncoding;
  /** Read chunk size in bytes; tests make it tiny to put chunk ends inside sequences. */
  readonly highWaterMark?: number;
}

export async function* decodeCensoFile(path: string, options: DecodeOptions = {}): AsyncGenerator<DecodeEvent> {
  if (options.encoding !== undefined && options.encoding !== 'utf-8') {
    yield* decodeAs(path, options.encoding, options);
    return;
  }
  const utf16 = options.encoding === undefined ? await sniffUtf16(path) : null;
  if (utf16 !== null) {
    yield { type: 'restart', encoding: utf16 };
    yield* decodeAs(path, utf16, options);
    return;
  }
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of readChunks(path, options)) {
      const text = utf8.decode(chunk, { stream: true });
      if (text) yield { type: 'text', text };
    }
    // A sequence cut by the end of the file is invalid too.
    const tail = utf8.decode();
    if (tail) yield { type: 'text', text: tail };
    return;
  } catch (err) {
    if (!(err instanceof TypeError) || (err as NodeJS.ErrnoException).code !== 'ERR_ENCODING_INVALID_ENCODED_DATA') {
      throw err;
    }
  }
  yield { type: 'restart', encoding: 'windows-1252' };
  yield* decodeAs(path, 'windows-1252', options);
}

/** Bytes looked at to recognise UTF-16 without a BOM: the first line, or this much of it. */
const SNIFF_BYTES = 512;

/**
 * UTF-16 by its BOM, or by the first line having NUL in every other byte (every character of a
 * census line is below U+0100, so one byte of each pair is 0): odd bytes for LE, even for BE.
 */
export async function sniffUtf16(path: string): Promise<'utf-16le' | 'utf-16be' | null> {
  const file = await open(path, 'r');
  let head: Buffer;
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await file.read(buffer, 0, SNIFF_BYTES, 0);
    head = buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  let le = true;
  let be = true;
  let pairs = 0;
  for (let i = 0; i + 1 < head.length; i += 2) {
    const a = head[i]!;
    const b = head[i + 1]!;
    if ((a === 0x0a || a === 0x0d) && b === 0) break; // LE line end
    if (a === 0 && (b === 0x0a || b === 0x0d)) break; // BE line end
    le &&= a !== 0 && b === 0;
    be &&= a === 0 && b !== 0;
    pairs++;
    if (!le && !be) return null;
  }
  if (pairs < 2) return null;
  return le ? 'utf-16le' : be ? 'utf-16be' : null;
}

async function* decodeAs(path: string, encoding: FixedEncoding, options: DecodeOptions): AsyncGenerator<DecodeEvent> {
  if (encoding !== 'windows-1252') {
    yield* decodeUtf16(path, encoding, options);
    return;
  }
  // Every byte is a windows-1252 character: this decoder cannot fail.
  const decoder = new TextDecoder(encoding);
  for await (const chunk of readChunks(path, options)) {
    const text = decoder.decode(chunk, { stream: true });
    if (text) yield { type: 'text', text };
  }
  const tail = decoder.decode();
  if (tail) yield { type: 'text', text: tail };
}

/**
 * UTF-16 has no fallback: an odd byte count (a file cut or saved wrongly) or half a surrogate
 * pair is not text, and decoding it anyway would put a `?` into the corrected file (a final `?`
 * line for the odd byte). Such a file is unreadable (400).
 */
async function* decodeUtf16(path: string, encoding: 'utf-16le' | 'utf-16be', options: DecodeOptions): AsyncGenerator<DecodeEvent> {
  const decoder = new TextDecoder(encoding, { fatal: true });
  let bytes = 0;
  let text: string;
  for await (const chunk of readChunks(path, options)) {
    bytes += chunk.length;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch (err) {
      throw utf16Error(err, false);
    }
    if (text) yield { type: 'text', text };
  }
  try {
    text = decoder.decode();
  } catch (err) {
    throw utf16Error(err, bytes % 2 === 1);
  }
  if (text) yield { type: 'text', text };
}

function utf16Error(err: unknown, oddBytes: boolean): unknown {
  if (!(err instanceof TypeError) || (err as NodeJS.ErrnoException).code !== 'ERR_ENCODING_INVALID_ENCODED_DATA') return err;
  return badInput.unreadableTxt(oddBytes ? 'texto UTF-16 com número ímpar de bytes.' : 'texto UTF-16 com caractere inválido.');
}

async function* readChunks(path: string, options: DecodeOptions): AsyncGenerator<Buffer> {
  const stream = createReadStream(path, {
    ...(options.highWaterMark ? { highWaterMark: options.highWaterMark } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  // for-await destroys the stream when the consumer stops early or an error is thrown.
  for await (const chunk of stream) yield chunk as Buffer;
}
