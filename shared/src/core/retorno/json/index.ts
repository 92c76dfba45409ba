// The JSON return reader (SPEC §1.2). The file is read as a stream of bytes and never held as
// one string: scanner.ts validates the document's skeleton and cuts the rows array into element
// byte ranges, rows.ts parses them in batches and decides which array holds the rows, tokens.ts
// validates the scalars outside the rows, values.ts gives a value's text.
//
// The chunks are read synchronously: a job runs on a job thread (or in the CLI) that has nothing
// else to do while it waits, and each asynchronous read is a round trip through libuv's thread
// pool, which every thread of the process shares (see ../xlsx/zip.ts). The batches are still
// yielded one chunk at a time, so memory stays one chunk plus the rows in hand, and the event loop
// gets a turn between chunks (setImmediate, no thread-pool hop): an abort, a timer or a message
// is still seen while a large file is read.
import { closeSync, openSync, readSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { RetornoRow } from '../../types.js';
import type { ColumnNames } from '../columns.js';
import { toUnreadable } from '../failure.js';
import { INVALID_JSON } from './errors.js';
import { JsonRowsScanner } from './scanner.js';

/**
 * Small enough that a chunk's text, even as two-byte characters, stays under V8's large-object
 * size (128 KiB): each larger string got a large-object page of its own, and old-generation
 * collections came with them. With 256 KiB chunks a j25 job took 570 ms on a job thread, with
 * 48 KiB 300 ms (alternating runs; 32-120 KiB all measured alike).
 */
const CHUNK_BYTES = 48 * 1024;

/** The rows, a chunk's worth at a time. */
export async function* readJsonBatches(
  path: string,
  signal: AbortSignal | undefined,
  names: ColumnNames,
  /** Told the school's INEP code (escola.ts) once the whole file has been read, when it holds one. */
  escola?: (codigo: string) => void,
): AsyncGenerator<RetornoRow[], void, undefined> {
  signal?.throwIfAborted();
  let fd = -1;
  const scanner = new JsonRowsScanner(names);
  try {
    fd = openSync(path, 'r');
    for (;;) {
      await nextTurn();
      signal?.throwIfAborted();
      // A fresh buffer each time: an element that spans chunks keeps its earlier ones.
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      const length = readSync(fd, chunk, 0, CHUNK_BYTES, null);
      if (length === 0) break;
      scanner.push(length === CHUNK_BYTES ? chunk : chunk.subarray(0, length));
      yield scanner.take();
    }
    scanner.end();
    yield scanner.take();
    // At the end: the property may follow the rows, and a file that turns out unreadable has no school.
    if (scanner.escola !== null) escola?.(scanner.escola);
  } catch (err) {
    throw toUnreadable(err, INVALID_JSON, signal);
  } finally {
    if (fd !== -1) closeSync(fd);
  }
}
