// The JSON answer of the upload routes, `{"<key>":[item,...]}`, streamed to a file in batches so a
// 300k-row return never becomes one string in memory.
import { ResultFile } from './result-file.js';

/** Items are written in batches of about this many characters: fewer writes, bounded memory. */
const BATCH_CHARS = 64 * 1024;

export function jsonListChunks(key: string, items: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<string> {
  return jsonListsChunks([[key, items]]);
}

/** `{"<key1>":[...],"<key2>":[...]}`: several lists in one object, each streamed in turn. */
export async function* jsonListsChunks(
  lists: readonly (readonly [string, AsyncIterable<unknown> | Iterable<unknown>])[],
): AsyncGenerator<string> {
  let batch = '{';
  for (const [index, [key, items]] of lists.entries()) {
    batch += `${index === 0 ? '' : ','}${JSON.stringify(key)}:[`;
    let first = true;
    for await (const item of items) {
      batch += (first ? '' : ',') + JSON.stringify(item);
      first = false;
      if (batch.length >= BATCH_CHARS) {
        yield batch;
        batch = '';
      }
    }
    batch += ']';
  }
  yield `${batch}}`;
}

/** Writes text chunks to `path` (a job's result file); returns the bytes written. */
export async function writeChunks(path: string, chunks: AsyncIterable<string>, signal?: AbortSignal): Promise<number> {
  const out = new ResultFile(path);
  try {
    for await (const chunk of chunks) {
      signal?.throwIfAborted();
      out.add(chunk);
    }
    out.flush();
    return out.position();
  } finally {
    out.close();
  }
}
