// The BullMQ processor: a thin shell around the job pool. All parsing happens in the pool's
// worker threads, so this process's event loop stays free to renew job locks (a CPU-bound
// processor on the main thread would let locks expire and get its jobs "stalled" mid-run).
import { access } from 'node:fs/promises';
import path from 'node:path';
import { UnrecoverableError, WaitingError, type Job } from 'bullmq';
import { ABORT_SHUTDOWN, UPLOAD_GONE, type JobData, type JobExecutor, type JobResult } from '@censo/shared';
import type { Logger } from 'pino';

export interface ProcessorOptions {
  /** Jobs may only touch files under this folder (the shared UPLOAD_DIR volume). */
  readonly uploadDir: string;
  readonly log: Logger;
}

export type JobProcessor = (job: Job<JobData, JobResult>, token?: string, signal?: AbortSignal) => Promise<JobResult>;

export function createProcessor(executor: JobExecutor, { uploadDir, log }: ProcessorOptions): JobProcessor {
  const root = path.resolve(uploadDir);

  // Three declared parameters: BullMQ only passes an abort signal to processors whose arity is 3.
  return async function process(job, token, signal) {
    const data = job.data;
    // Job data comes from Redis: whoever can write there must not make the worker read or
    // write files outside the upload volume.
    const folder = checkPaths(data, root);
    const jobLog = log.child({ jobId: job.id, kind: data.kind, attempt: job.attemptsStarted });

    // The API deletes the folder as soon as its request ends (timeout, client gone), and a job
    // can still be waiting then: failing it without retries is the expected, quiet outcome.
    if (!(await exists(folder))) throw new UnrecoverableError(UPLOAD_GONE);

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
      if (!(await exists(folder))) throw new UnrecoverableError(UPLOAD_GONE);
      throw err; // a bug or infrastructure: BullMQ retries it up to JOB_ATTEMPTS
    }
  };
}

function checkPaths(data: JobData, root: string): string {
  const paths = [data?.resultPath, data?.retorno?.path, data?.kind === 'divergencias' ? root : data?.txt?.path];
  const folder = typeof data?.resultPath === 'string' ? path.dirname(path.resolve(data.resultPath)) : '';
  const valid =
    (data?.kind === 'divergencias' || data?.kind === 'retorno-rf' || data?.kind === 'censo-corrigido') &&
    paths.every((p) => typeof p === 'string' && isInside(root, path.resolve(p))) &&
    folder !== root &&
    isInside(root, folder);
  if (!valid) throw new UnrecoverableError('invalid job data: paths must be inside UPLOAD_DIR');
  return folder;
}

function isInside(root: string, target: string): boolean {
  if (target === root) return true;
  const rel = path.relative(root, target);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
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
