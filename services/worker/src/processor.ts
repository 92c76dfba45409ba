// The BullMQ processor: a thin shell around the job pool. All parsing happens in the pool's
// worker threads, so this process's event loop stays free to renew job locks (a CPU-bound
// processor on the main thread would let locks expire and get its jobs "stalled" mid-run).
import { setTimeout as sleep } from 'node:timers/promises';
import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import {
  ABORT_SHUTDOWN,
  InputsGoneError,
  InvalidJobDataError,
  JOB_CONTRACT_VERSION,
  StorageUnavailableError,
  UPLOAD_GONE,
  contractOf,
  jobOf,
  storageExecutor,
  type JobData,
  type JobExecutor,
  type JobResult,
  type QueuedJobData,
  type Storage,
} from '@censo/shared';
import type { Logger } from 'pino';

export interface ProcessorOptions {
  /** Where the API put the job's files: jobs may only touch files of one of its request areas. */
  readonly storage: Storage;
  readonly log: Logger;
  /** The newest contract version this worker knows (tests play a rolling upgrade with it). */
  readonly contractVersion?: number;
  /** How long a slot that gave back a job of a newer contract stays away from the queue (default 1 s). */
  readonly handBackPauseMs?: number;
}

/**
 * A worker that gives a job back would otherwise take it again at once: it asks the queue for
 * its next job before a newer worker, woken by the same job's return, can (measured: an N worker
 * took an N+1 job back every time, for as long as it ran). So the slot that gave it back stays
 * busy this long, and the newer worker takes the job meanwhile.
 */
export const HAND_BACK_PAUSE_MS = 1_000;

export type JobProcessor = (job: Job<QueuedJobData, JobResult>, token?: string, signal?: AbortSignal) => Promise<JobResult>;

export function createProcessor(
  pool: JobExecutor,
  { storage, log, contractVersion = JOB_CONTRACT_VERSION, handBackPauseMs = HAND_BACK_PAUSE_MS }: ProcessorOptions,
): JobProcessor {
  const executor = storageExecutor(storage, pool);
  /** Newer versions already reported: a job waiting for a newer worker comes back every second. */
  const reported = new Set<number>();

  // Three declared parameters: BullMQ only passes an abort signal to processors whose arity is 3.
  return async function process(job, token, signal) {
    const version = contractOf(job.data);
    if (version === null) throw new UnrecoverableError('invalid job data: its contract version is not a whole number from 1');
    if (version > contractVersion) {
      // Sent by a newer API during a rolling upgrade (SPEC §9): back to the queue for a worker
      // that knows its contract, never failed, and without spending one of its attempts.
      if (!reported.has(version)) {
        reported.add(version);
        log.warn({ jobId: job.id, contract: version, known: contractVersion }, 'job of a newer contract left for a newer worker');
      }
      if (!token) throw new Error('a job of a newer contract can only be given back with its lock token');
      await job.moveToWait(token);
      await sleep(handBackPauseMs, undefined, { signal }).catch(() => undefined); // a closing worker need not wait
      throw new WaitingError();
    }
    const data = jobOf(job.data);
    // Job data comes from Redis: whoever can write there must not make the worker read or
    // write files outside the storage's request areas.
    try {
      storage.checkJobData(data);
    } catch (err) {
      if (err instanceof InvalidJobDataError) throw new UnrecoverableError(err.message);
      throw err;
    }
    const jobLog = log.child({ jobId: job.id, kind: data.kind, attempt: job.attemptsStarted, contract: version });

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
