// Embedded runner (no REDIS_URL): the job runs in this process, on a worker-thread pool so that
// parsing a 25 MB workbook never blocks the event loop that serves other requests.
import { JobTimeoutError, storageExecutor, type JobData, type JobPool, type JobResult, type Storage } from '@censo/shared';
import type { JobRunner, RunOptions } from './runner.js';

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export function createInProcessRunner(pool: JobPool, storage: Storage): JobRunner {
  // With S3 storage the pool's threads still read local files: the executor copies them first.
  const executor = storageExecutor(storage, pool);
  return {
    mode: 'in-process',
    async run(data: JobData, { signal, deadline }: RunOptions): Promise<JobResult> {
      const timeout = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
      const aborted = AbortSignal.any([signal, timeout]);
      try {
        // Settles as soon as either signal aborts, not when the pool has finished terminating the
        // thread: the request log and metrics record the outcome in the same turn as the abort.
        return await Promise.race([executor.run(data, aborted), rejectOnAbort(aborted)]);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (timeout.aborted) throw new JobTimeoutError();
        throw err;
      }
    },
    async isReady() {
      return true;
    },
    async close() {
      await pool.close();
    },
  };
}
