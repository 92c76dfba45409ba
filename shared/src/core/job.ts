// One job, file paths in and the exact response body out (STYLE "Job boundary"). Domain failures
// (a bad file, a txt that does not match) come back as `{ ok: false }` results so the queue never
// retries them; anything thrown is a bug or infrastructure.
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { findDivergencias } from './divergencias.js';
import { CensoError } from './errors.js';
import { mergePessoas } from './merge.js';
import { readRetorno } from './retorno/index.js';
import type { JobData, JobResult } from './types.js';

export interface RunJobOptions {
  readonly signal?: AbortSignal;
}

const RESULT_STATUSES: ReadonlySet<number> = new Set([400, 413, 422]);
/** Items are written in batches of about this many characters: fewer writes, bounded memory. */
const BATCH_CHARS = 64 * 1024;

export async function runJob(data: JobData, options: RunJobOptions = {}): Promise<JobResult> {
  const { signal } = options;
  try {
    signal?.throwIfAborted();
    const written =
      data.kind === 'divergencias'
        ? await writeBody(data.resultPath, 'divergencias', findDivergencias(readRetorno(data.retorno, { signal })), signal)
        : await writeBody(
            data.resultPath,
            'pessoas',
            // The merge finishes before the file is created: a mismatch leaves nothing to clean.
            await mergePessoas(findDivergencias(readRetorno(data.retorno, { signal })), data.txt.path, { signal }),
            signal,
          );
    return { ok: true, ...written };
  } catch (err) {
    await rm(data.resultPath, { force: true });
    if (err instanceof CensoError && RESULT_STATUSES.has(err.status)) {
      return { ok: false, status: err.status as 400 | 413 | 422, code: err.code, erro: err.message };
    }
    throw err;
  }
}

/**
 * Streams `{"<key>":[item,...]}` as compact JSON to `path`. The pipeline waits for the file to
 * drain, so a 300k-row return never becomes one string in memory.
 */
async function writeBody(
  path: string,
  key: string,
  items: AsyncIterable<unknown> | Iterable<unknown>,
  signal: AbortSignal | undefined,
): Promise<{ count: number; bytes: number }> {
  let count = 0;
  let bytes = 0;
  async function* body(): AsyncGenerator<string> {
    let batch = `{${JSON.stringify(key)}:[`;
    for await (const item of items) {
      batch += (count === 0 ? '' : ',') + JSON.stringify(item);
      count++;
      if (batch.length >= BATCH_CHARS) {
        bytes += Buffer.byteLength(batch);
        yield batch;
        batch = '';
      }
    }
    batch += ']}';
    bytes += Buffer.byteLength(batch);
    yield batch;
  }
  await pipeline(body, createWriteStream(path), ...(signal ? [{ signal }] : []));
  return { count, bytes };
}
