// Entry module of the job pool's worker threads (piscina calls the default export per task).
// The vocabulary (COLUMNS_FILE additions) comes once per thread, as the pool's workerData.
//
// The CommonJS packages a thread uses (piscina here, yauzl in the core) are loaded with
// require, not import: importing CommonJS from ESM makes Node scan the package's source for its
// export names (cjs-module-lexer), and that scanner ran long enough in every new thread for V8 to
// optimize it there, each time. Measured with --trace-opt on `censo lote` over 200 school returns:
// that compilation was 290 of 823 ms of background compiling with one thread, 668 of 1,732 with
// two, which on two cores is time taken from the threads' own work.
import { readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { getPriority, setPriority } from 'node:os';
import type * as Piscina from 'piscina';
import { runJob } from '../core/job.js';
import { runLoteBatch, type LoteBatch, type LoteFileOutcome } from '../core/lote.js';
import type { JobData, JobResult } from '../core/types.js';
import { createVocabulary, type VocabularyAdditions } from '../core/vocabulary.js';

const { workerData } = createRequire(import.meta.url)('piscina') as typeof Piscina;

const data = workerData as { vocabulary?: VocabularyAdditions; niceness?: number } | undefined;
const vocabulary = createVocabulary(data?.vocabulary);
if (data?.niceness) lowerOwnPriority(data.niceness);

/**
 * This thread's niceness (JobPoolOptions.niceness). On Linux setpriority() on a thread id applies
 * to that thread alone; the id is in /proc/thread-self. Elsewhere, or where /proc is not mounted,
 * the thread keeps the process's priority: slower interactive answers under a burst, not an error.
 */
function lowerOwnPriority(niceness: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.max(getPriority(tid), niceness));
  } catch {
    // not Linux, or no /proc
  }
}

/** When the thread ran a job, in ms since the epoch: the pool records it as a span (job-pool.ts). */
export interface ThreadTimes {
  readonly inicio: number;
  readonly fim: number;
}

const now = (): number => performance.timeOrigin + performance.now();

export default async function runJobInThread(data: JobData): Promise<JobResult & { readonly tempos: ThreadTimes }> {
  const inicio = now();
  const result = await runJob(data, { vocabulary });
  return { ...result, tempos: { inicio, fim: now() } };
}

/** `censo lote`'s batches (piscina's named task, JobPool.runLote). */
export function runLoteBatchInThread(batch: LoteBatch): Promise<LoteFileOutcome[]> {
  return runLoteBatch(batch, { vocabulary });
}
