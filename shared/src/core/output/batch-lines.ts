// A batch task's divergences as lines of the batch's combined CSV (SPEC §7.3: `referencia,arquivo,`
// then the divergence's columns), written by the task's job beside its JSON result. The combined
// answer then sends each task's lines as they are stored; before, the API parsed every task's JSON
// and wrote each line again, about half of its CPU in a state's burst (issue 35).
import type { BatchLines } from '../types.js';
import { csvField, csvLine } from './csv.js';
import { ResultFile } from './result-file.js';
import { cellValues } from './table.js';

/** What every line of a task starts with: its leading fields, each followed by its comma. */
export function batchLinePrefix(leading: readonly string[]): string {
  return leading.map((field) => `${csvField(field)},`).join('');
}

/** `item`'s line: the same bytes as `csvLine([...leading, ...cellValues(item, columns)])`. */
export function batchLine(prefix: string, item: object, columns: readonly string[]): string {
  return prefix + csvLine(cellValues(item, columns));
}

/**
 * The same items, each also written as its line to `lines.path` as it passes: the file is whole
 * once the items end, and closed however they stop (a failed job's files are removed by the job).
 */
export async function* writingBatchLines<T extends object>(
  items: AsyncIterable<T> | Iterable<T>,
  lines: BatchLines,
  columns: readonly string[],
): AsyncGenerator<T> {
  const prefix = batchLinePrefix(lines.leading);
  const file = new ResultFile(lines.path);
  try {
    for await (const item of items) {
      file.add(batchLine(prefix, item, columns));
      yield item;
    }
    file.flush();
  } finally {
    file.close();
  }
}
