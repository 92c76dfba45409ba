// Census text decoding (SPEC §1.1): UTF-8 when the whole file is valid UTF-8 (a BOM is dropped),
// otherwise WHATWG windows-1252. Validity is only known at the end of the file, so the file is
// read once with a fatal streaming UTF-8 decoder and, at the first invalid sequence, read again
// from the start as windows-1252. Consumers see that as a `restart` event and drop what they
// built so far: a windows-1252 file can begin with bytes that are also valid UTF-8 (`Ã©`), so
// the text yielded before the restart may be wrong, not just incomplete.
import { createReadStream } from 'node:fs';

export type CensoEncoding = 'utf-8' | 'windows-1252';

export type DecodeEvent =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'restart'; readonly encoding: 'windows-1252' };

export interface DecodeOptions {
  readonly signal?: AbortSignal;
  /** Decode as this, without detection: a second pass over a file whose encoding is known. */
  readonly encoding?: CensoEncoding;
  /** Read chunk size in bytes; tests make it tiny to put chunk ends inside sequences. */
  readonly highWaterMark?: number;
}

export async function* decodeCensoFile(path: string, options: DecodeOptions = {}): AsyncGenerator<DecodeEvent> {
  if (options.encoding === 'windows-1252') {
    yield* decodeAs(path, 'windows-1252', options);
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

async function* decodeAs(path: string, encoding: 'windows-1252', options: DecodeOptions): AsyncGenerator<DecodeEvent> {
  const decoder = new TextDecoder(encoding);
  for await (const chunk of readChunks(path, options)) {
    const text = decoder.decode(chunk, { stream: true });
    if (text) yield { type: 'text', text };
  }
  const tail = decoder.decode();
  if (tail) yield { type: 'text', text: tail };
}

async function* readChunks(path: string, options: DecodeOptions): AsyncGenerator<Buffer> {
  const stream = createReadStream(path, {
    ...(options.highWaterMark ? { highWaterMark: options.highWaterMark } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  // for-await destroys the stream when the consumer stops early or an error is thrown.
  for await (const chunk of stream) yield chunk as Buffer;
}
