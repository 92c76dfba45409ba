// A batch task's divergences as lines of the batch's combined CSV (SPEC §7.3: `referencia,arquivo,`
// then the divergence's columns), written by the task's job beside its JSON result. The combined
// answer then sends each task's lines as they are stored; before, the API parsed every task's JSON
// and wrote each line again, about half of its CPU in a state's burst (issue 35).
import { csvField } from './csv.js';
import { ResultFile } from './result-file.js';
import { cellValue } from './table.js';

/** Lines are written in text of about this many characters. */
const BATCH_CHARS = 64 * 1024;

/** What every line of a task starts with: its leading fields, each followed by its comma. */
export function batchLinePrefix(leading: readonly string[]): string {
  return leading.map((field) => `${csvField(field)},`).join('');
}

/**
 * `item`'s line: the same bytes as `csvLine([...leading, ...cellValues(item, columns)])`
 * (test/unit/batch-lines.test.ts holds the two to that), built field by field. A batch's task
 * writes one a divergence, tens of millions in a state's batch; that expression's two arrays and
 * join cost a return of 745 divergences about 0.35 ms of its job's 6 ms (bench/job-cost.mjs's
 * batch task, 8 rounds of 300 alternating: 5.96 → 5.61 ms a file, medians; issue 55).
 */
export function batchLine(prefix: string, item: object, columns: readonly string[]): string {
  const record = item as Record<string, unknown>;
  let line = prefix;
  for (let i = 0; i < columns.length; i++) line += (i > 0 ? ',' : '') + csvField(cellValue(record[columns[i]!]));
  return `${line}\r\n`;
}

/**
 * A task's batch lines file, written as the job's items pass (writeTable's `seen`: a wrapping
 * async generator cost ~2.5 ms a school's return in promise hops, more than the lines). Whole
 * after `end`; `close` in every case (a failed job's files are removed by the job).
 */
export class BatchLinesFile {
  readonly #file: ResultFile;
  readonly #prefix: string;
  readonly #columns: readonly string[];
  // Lines are gathered into text of about BATCH_CHARS per write: one Buffer.write a line cost
  // ~1 ms a school's return (745 lines).
  #batch = '';

  constructor(path: string, leading: readonly string[], columns: readonly string[]) {
    this.#prefix = batchLinePrefix(leading);
    this.#columns = columns;
    this.#file = new ResultFile(path);
  }

  add(item: object): void {
    this.#batch += batchLine(this.#prefix, item, this.#columns);
    if (this.#batch.length >= BATCH_CHARS) {
      this.#file.add(this.#batch);
      this.#batch = '';
    }
  }

  end(): void {
    this.#file.add(this.#batch);
    this.#batch = '';
    this.#file.flush();
  }

  close(): void {
    this.#file.close();
  }
}
