// The BullMQ processor: a thin shell around the job pool. All parsing happens in the pool's
// worker threads, so this process's event loop stays free to renew job locks (a CPU-bound
// processor on the main thread would let locks expire and get its jobs "stalled" mid-run).
import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import {
  ABORT_SHUTDOWN,
  InputsGoneError,
  InvalidJobDataError,
  StorageUnavailableError,
  UPLOAD_GONE,
  storageExecutor,
  type JobData,
  type JobExecutor,
  type JobResult,
  type Storage,
} from '@censo/shared';
import type { Logger } from 'pino';

export interface ProcessorOptions {
  /** Where the API put the job's files: jobs may only touch files of one of its request areas. */
  readonly storage: Storage;
  readonly log: Logger;
}

export type JobProcessor = (job: Job<JobData, JobResult>, token?: string, signal?: AbortSignal) => Promise<JobResult>;

export function createProcessor(pool: JobExecutor, { storage, log }: ProcessorOptions): JobProcessor {
  const executor = storageExecutor(storage, pool);

  // Three declared parameters: BullMQ only passes an abort signal to processors whose arity is 3.
  return async function process(job, token, signal) {
    const data = job.data;
    // Job data comes from Redis: whoever can write there must not make the worker read or
    // write files outside the storage's request areas.
    try {
      storage.checkJobData(data);
    } catch (err) {
      if (err instanceof InvalidJobDataError) throw new UnrecoverableError(err.message);
      throw err;
    }
    const jobLog = log.child({ jobId: job.id, kind: data.kind, attempt: job.attemptsStarted });

    // The API deletes the request's files as soon as its request ends (timeout, client gone), and
    // a job can still be waiting then: failing it without retries is the expected, quiet outcome.
    if (!(await inputsExist(storage, data))) throw new UnrecoverableError(UPLOAD_GONE);

    const started = performance.now();
    try {
      const result = await untilAborted(executor.run(data, signal), signal);
      // One line per job, like the API's per-request line: ids and counts, never file contents.
      jobLog.info(
        { ok: result.ok, ...(result.ok ? { count: result.count } : { code: result.code }), ms: Math.round(performance.now() - started) },
        'job done',
      );
      return result;
    } catch (err) {
      if (signal?.aborted) {
        if (signal.reason === ABORT_SHUTDOWN && token) {
          // Give the job back to the queue for another worker, without spending an attempt.
          await job.moveToWait(token);
          throw new WaitingError();
        }
        // Cancelled by the API: nobody waits for this job any more.
        throw new UnrecoverableError(String(signal.reason ?? 'aborted'));
      }
      if (err instanceof InputsGoneError || !(await inputsExist(storage, data))) throw new UnrecoverableError(UPLOAD_GONE);
      // The request waits synchronously: a storage outage is its 503 now, not a retry later.
      if (err instanceof StorageUnavailableError) {
        jobLog.warn({ err: err.cause }, 'storage unavailable');
        return { ok: false, status: 503, code: err.code, erro: err.message };
      }
      throw err; // a bug or infrastructure: BullMQ retries it up to JOB_ATTEMPTS
    }
  };
}

/** Unknown (the storage does not answer) counts as present: the job itself then reports the outage. */
async function inputsExist(storage: Storage, data: JobData): Promise<boolean> {
  return storage.inputsExist(data).catch(() => true);
}

/**
 * Rejects as soon as the signal aborts, even if the pool is slow to notice: shutdown and
 * cancellation must not wait for a long parse to reach its next checkpoint.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
