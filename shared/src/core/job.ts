// One job, file paths in and the response body written to `resultPath` (the job boundary shared
// by the embedded pool, the BullMQ worker and the CLI). Domain failures (a bad file, a txt that
// does not match) come back as `{ ok: false }` results so the queue never retries them; anything
// thrown is a bug or infrastructure.
import { rm } from 'node:fs/promises';
import { writeCensoCorrigido } from './censo/corrigido.js';
import { BUILTIN_FIELD_LABELS, comDivergencias, lidaBatches } from './divergencias.js';
import { itemsOf } from './item-stream.js';
import { CensoError } from './errors.js';
import { matchPersons } from './merge.js';
import { pessoaBatches } from './censo/pessoas-corrigidas.js';
import { BatchLinesFile } from './output/batch-lines.js';
import { csvChunks } from './output/csv.js';
import { jsonListChunks, writeChunks } from './output/json.js';
import { DIVERGENCIAS_TABLE, PESSOAS_TABLE, tableRows, type TableShape } from './output/table.js';
import { writeXlsx } from './output/xlsx.js';
import { planilhaRows } from './output/planilha.js';
import { readRetornoBatches } from './retorno/index.js';
import { batchLinesPath, outputsOf, type JobData, type JobResult, type OutputFormat } from './types.js';
import type { Vocabulary } from './vocabulary.js';

export interface RunJobOptions {
  readonly signal?: AbortSignal;
  /** The words to recognise in the return (default: SPEC's built-in ones). */
  readonly vocabulary?: Vocabulary;
}

const RESULT_STATUSES: ReadonlySet<number> = new Set([400, 413, 422]);

export async function runJob(data: JobData, options: RunJobOptions = {}): Promise<JobResult> {
  const { signal, vocabulary } = options;
  try {
    signal?.throwIfAborted();
    const readOptions = { ...(signal ? { signal } : {}), ...(vocabulary ? { names: vocabulary.columns } : {}) };
    const labels = vocabulary?.labels ?? BUILTIN_FIELD_LABELS;
    // Batches from the reader to the writer or the merge: one promise per divergence, none per row.
    if (data.kind === 'divergencias') {
      // The school the return is about, for the season's ledger and the comparison (issue 54).
      let escola: string | null = null;
      const written = await comDivergencias(
        () => readRetornoBatches(data.retorno, { ...readOptions, escola: (codigo) => (escola = codigo) }),
        labels,
        async (divergencias) => {
          const lines = data.batchLines
            ? new BatchLinesFile(batchLinesPath(data.resultPath), data.batchLines, DIVERGENCIAS_TABLE.columns)
            : undefined;
          try {
            const table = await writeTable(
              data.resultPath,
              data.format ?? 'json',
              DIVERGENCIAS_TABLE,
              itemsOf(divergencias),
              signal,
              lines && ((item) => lines.add(item)),
            );
            lines?.end();
            return table;
          } finally {
            lines?.close();
          }
        },
      );
      return { ok: true, ...written, escola };
    }
    // The merge finishes before the result file is created: a mismatch leaves nothing to clean. It
    // needs no `correcao`: the corrected file decides on the text file's own values (SPEC §11).
    const rows = readRetornoBatches(data.retorno, readOptions);
    const matched = await matchPersons(itemsOf(lidaBatches(rows, labels)), data.txt.path, { ...(signal ? { signal } : {}) });
    if (data.kind === 'retorno-rf') {
      return {
        ok: true,
        // The persons are read from the text file's second pass as the writer asks for them: held
        // all at once, 100k of them would double the merge's heap.
        ...(await writeTable(
          data.resultPath,
          data.format ?? 'json',
          PESSOAS_TABLE,
          itemsOf(pessoaBatches(matched, data.txt.path, { ...(signal ? { signal } : {}) })),
          signal,
        )),
      };
    }
    const { bytes, pessoasCorrigidas, naoAplicadas, amostra, pessoasRegra25, amostraRegra25 } = await writeCensoCorrigido(
      data.txt.path,
      matched,
      data.resultPath,
      {
        ...(signal ? { signal } : {}),
      },
    );
    return {
      ok: true,
      count: matched.lines.size,
      bytes,
      corrigido: { pessoasCorrigidas, naoAplicadas, amostra, pessoasRegra25, amostraRegra25 },
    };
  } catch (err) {
    await Promise.all(outputsOf(data).map((path) => rm(path, { force: true })));
    const failure = jobFailure(err);
    if (failure) return failure;
    throw err;
  }
}

/** What a job answers for `err` when it is the input's fault; null when it is a bug or infrastructure. */
export function jobFailure(err: unknown): (JobResult & { ok: false }) | null {
  if (err instanceof CensoError && RESULT_STATUSES.has(err.status)) {
    return { ok: false, status: err.status as 400 | 413 | 422, code: err.code, erro: err.message };
  }
  return null;
}

/** Writes a list answer in `format`; returns how many items it holds and the file's size. */
export async function writeTable(
  path: string,
  format: OutputFormat,
  table: TableShape,
  items: AsyncIterable<object> | Iterable<object>,
  signal?: AbortSignal,
  /** Told each item as it is written (a batch's task's lines of the combined CSV). */
  seen?: (item: object) => void,
): Promise<{ count: number; bytes: number }> {
  let count = 0;
  const counted = countedItems(items, (item) => {
    count++;
    seen?.(item);
  });
  let bytes: number;
  if (format === 'json') bytes = await writeChunks(path, jsonListChunks(table.key, counted), signal);
  else if (format === 'csv') bytes = await writeChunks(path, csvChunks(table.columns, tableRows(counted, table.columns)), signal);
  else bytes = (await writeXlsx(path, table.key, table.planilha.columns, planilhaRows(counted, table.planilha), signal)).bytes;
  return { count, bytes };
}

/**
 * The same items, calling `seen` for each as it is taken: a sync source stays sync, and an async
 * one gets one `then` per item instead of an async generator's several promise hops.
 */
function countedItems<T>(items: AsyncIterable<T> | Iterable<T>, seen: (item: T) => void): AsyncIterable<T> | Iterable<T> {
  if (Symbol.iterator in items) {
    return (function* () {
      for (const item of items) {
        seen(item);
        yield item;
      }
    })();
  }
  return {
    [Symbol.asyncIterator]() {
      const source = items[Symbol.asyncIterator]();
      return {
        next: () =>
          source.next().then((result) => {
            if (!result.done) seen(result.value);
            return result;
          }),
        return: async (value?: unknown) => (await source.return?.(value)) ?? { value: undefined, done: true },
      };
    },
  };
}
