// The JSON return reader (SPEC §1.2). The file is read as a stream of bytes and never held as
// one string: scanner.ts validates the document's skeleton and cuts the rows array into element
// byte ranges, rows.ts parses them in batches and decides which array holds the rows, tokens.ts
// validates the scalars outside the rows, values.ts gives a value's text.
import { createReadStream } from 'node:fs';
import type { RetornoRow } from '../../types.js';
import type { ColumnNames } from '../columns.js';
import { toUnreadable } from '../failure.js';
import { INVALID_JSON } from './errors.js';
import { JsonRowsScanner } from './scanner.js';

const CHUNK_BYTES = 256 * 1024;

/** The rows, a chunk's worth at a time. */
export async function* readJsonBatches(
  path: string,
  signal: AbortSignal | undefined,
  names: ColumnNames,
): AsyncGenerator<RetornoRow[], void, undefined> {
  signal?.throwIfAborted();
  const stream = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  const scanner = new JsonRowsScanner(names);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      signal?.throwIfAborted();
      scanner.push(chunk);
      yield scanner.take();
    }
    scanner.end();
    yield scanner.take();
  } catch (err) {
    throw toUnreadable(err, INVALID_JSON, signal);
  } finally {
    stream.destroy();
  }
}
