// CPU work (xlsx/JSON parsing, the merge) runs on worker threads so the API's event loop keeps
// answering health checks and other requests while a 25 MB file is processed.
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type * as PiscinaModule from 'piscina';
import { OverloadedError, badInput } from '../core/errors.js';
import type { LoteBatch, LoteFileOutcome } from '../core/lote.js';
import { outputsOf, type JobData, type JobResult } from '../core/types.js';
import type { VocabularyAdditions } from '../core/vocabulary.js';
import type { ThreadTimes } from './job-thread.js';
import { inSpan, recordSpan } from './telemetry.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const { Piscina } = createRequire(import.meta.url)('piscina') as typeof PiscinaModule;

export interface JobPoolOptions {
  readonly threads: number;
  /** Tasks waiting for a thread before `run` rejects with OverloadedError (default max(64, threads × 16)). */
  readonly maxQueue?: number;
  /** An idle thread exits after this long (default 30 s); one is started again on demand. */
  readonly idleTimeoutMs?: number;
  /** How long `close()` lets running jobs finish before terminating their threads (default 5 s). */
  readonly closeTimeoutMs?: number;
  /** Old-generation heap of each thread, MiB (default JOB_HEAP_LIMIT_MB). */
  readonly heapLimitMb?: number;
  /** COLUMNS_FILE additions every thread recognises (loadColumnsFile). */
  readonly vocabulary?: VocabularyAdditions;
  /**
   * Start every thread now (each loads the job module as it starts) instead of on the first
   * tasks: `censo lote` starts them while it walks the folder and loads its own modules.
   */
  readonly startThreads?: boolean;
  /**
   * The threads' OS scheduling niceness (Linux; ignored elsewhere): a batch's tasks run on a pool
   * of their own at BATCH_NICENESS, so the synchronous requests' threads get the cores first.
   */
  readonly niceness?: number;
}

/**
 * Niceness of the threads that run asynchronous tasks (SPEC §7.5: below the synchronous jobs).
 * Linux gives a nice-0 thread about nine times the CPU of a nice-10 one when both want it, and a
 * thread may always lower its own priority, unprivileged.
 */
export const BATCH_NICENESS = 10;

/**
 * A job's heap ceiling. The largest legitimate inputs (25 MB txt + return) peak near 150 MiB of
 * heap; a crafted file that would need more fails its own job (400) instead of the process.
 */
export const JOB_HEAP_LIMIT_MB = 512;

/**
 * A job thread's young generation. A job's garbage is short-lived (one chunk's rows, one row's
 * strings), so V8's default (16 MiB semi-spaces) mostly holds garbage that a smaller one collects
 * as well. Measured on a one-thread pool (3 interleaved rounds, medians): the t25 retorno-rf job
 * peaked at 196 MiB (default), 176 (16) and 168 (8); the j25 json divergencias job took 877 ms,
 * 898 and 927 ms with peaks of 123, 104 and 98 MiB. 16 keeps most of the memory for ~2% of time.
 */
export const JOB_YOUNG_GENERATION_MB = 16;

const OUT_OF_MEMORY: JobResult & { ok: false } = {
  ok: false,
  status: 400,
  code: 'BAD_INPUT',
  erro: badInput.outOfMemory().message,
};

/** What runs a job: the pool, or a stand-in in tests. The runners and the worker depend on this. */
export interface JobExecutor {
  /** Rejects with an error named `AbortError` when `signal` aborts; the thread is terminated. */
  run(data: JobData, signal?: AbortSignal): Promise<JobResult>;
}

export interface JobPool extends JobExecutor {
  /** Cancels queued jobs, waits up to `closeTimeoutMs` for running ones, then stops every thread. */
  close(): Promise<void>;
}

/** Compiled code only: the thread loads dist/runtime/job-thread.js next to this file. */
const THREAD_FILE = new URL('./job-thread.js', import.meta.url).href;

/** The pool as `censo lote` uses it. */
export interface LotePool extends JobPool {
  /**
   * One of `censo lote`'s batches, an outcome per file. A thread out of memory on a batch of one
   * file is that file's failure; on a larger batch it rejects, and the caller runs the files alone.
   */
  runLote(batch: LoteBatch): Promise<LoteFileOutcome[]>;
}

export function createJobPool(options: JobPoolOptions): LotePool {
  const threads = Math.max(1, Math.floor(options.threads));
  const pool = new Piscina({
    filename: THREAD_FILE,
    minThreads: options.startThreads ? threads : 0,
    maxThreads: threads,
    idleTimeout: options.idleTimeoutMs ?? 30_000,
    closeTimeout: options.closeTimeoutMs ?? 5_000,
    resourceLimits: { maxOldGenerationSizeMb: options.heapLimitMb ?? JOB_HEAP_LIMIT_MB, maxYoungGenerationSizeMb: JOB_YOUNG_GENERATION_MB },
    workerData: { vocabulary: options.vocabulary ?? {}, niceness: options.niceness ?? 0 },
  });
  // Piscina reports a close timeout as an 'error' event; unhandled, it would crash the process.
  // close() terminates the threads right after it anyway.
  pool.on('error', () => {});
  let closing: Promise<void> | null = null;
  // Bounded here rather than with piscina's maxQueue: piscina parks tasks that carry an
  // AbortSignal (all of ours) in a side queue that its maxQueue does not count.
  const capacity = threads + Math.max(0, options.maxQueue ?? Math.max(64, threads * 16));
  let inFlight = 0;

  return {
    async run(data, signal) {
      if (inFlight >= capacity) throw new OverloadedError();
      inFlight++;
      try {
        // The job's time on its thread (and waiting for one) as a span of the request's or the job's trace.
        return await inSpan('job thread', { 'censo.job.kind': data.kind }, async (span) => {
          const { tempos, ...result } = (await pool.run(data, signal ? { signal } : {})) as JobResult & { tempos?: ThreadTimes };
          // The job's own time on its thread, inside the wait for one (issue 56: where a slow file spends it).
          if (tempos) recordSpan('job run', { 'censo.job.kind': data.kind }, tempos.inicio, tempos.fim);
          span?.setAttributes(
            result.ok
              ? { 'censo.job.ok': true, 'censo.job.count': result.count }
              : { 'censo.job.ok': false, 'censo.job.code': result.code },
          );
          return result as JobResult;
        });
      } catch (err) {
        if (signal?.aborted) await removeAbandonedResults(outputsOf(data));
        else if (isOutOfMemory(err)) {
          // The thread is gone (piscina starts another); its partial result may remain.
          await removeAbandonedResults(outputsOf(data));
          return OUT_OF_MEMORY;
        }
        throw err;
      } finally {
        inFlight--;
      }
    },
    async runLote(batch) {
      if (inFlight >= capacity) throw new OverloadedError();
      inFlight++;
      try {
        return (await pool.run(batch, { name: 'runLoteBatchInThread' })) as LoteFileOutcome[];
      } catch (err) {
        await removeAbandonedResults([batch.resultPath]);
        if (batch.files.length === 1 && isOutOfMemory(err)) return [{ ok: false, erro: OUT_OF_MEMORY.erro }];
        throw err;
      } finally {
        inFlight--;
      }
    },
    close() {
      closing ??= pool.close({ force: true });
      return closing;
    },
  };
}

function isOutOfMemory(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
}

/**
 * A terminated thread cannot clean up after itself, so its partial result file is removed here.
 * Termination is asynchronous: a write already handed to libuv may land after the first removal,
 * hence one more attempt a moment later.
 */
async function removeAbandonedResults(paths: readonly string[]): Promise<void> {
  const remove = () => Promise.all(paths.map((path) => rm(path, { force: true }).catch(() => {})));
  await remove();
  setTimeout(() => void remove(), 500).unref();
}
