// Entry module of the job pool's worker threads (piscina calls the default export per task).
// The vocabulary (COLUMNS_FILE additions) comes once per thread, as the pool's workerData.
import { workerData } from 'piscina';
import { runJob } from '../core/job.js';
import { runLoteBatch, type LoteBatch, type LoteFileOutcome } from '../core/lote.js';
import type { JobData, JobResult } from '../core/types.js';
import { createVocabulary, type VocabularyAdditions } from '../core/vocabulary.js';

const vocabulary = createVocabulary((workerData as { vocabulary?: VocabularyAdditions } | undefined)?.vocabulary);

export default function runJobInThread(data: JobData): Promise<JobResult> {
  return runJob(data, { vocabulary });
}

/** `censo lote`'s batches (piscina's named task, JobPool.runLote). */
export function runLoteBatchInThread(batch: LoteBatch): Promise<LoteFileOutcome[]> {
  return runLoteBatch(batch, { vocabulary });
}
