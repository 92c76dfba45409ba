// Jobs whose files are in the storage: the executor (the thread pool) works on local paths, so
// each job runs inside the storage's runWithLocalFiles (which hands the folder's paths straight on).
import type { JobData, JobResult } from '../core/types.js';
import type { JobExecutor } from '../runtime/job-pool.js';
import type { Storage } from './port.js';

export function storageExecutor(storage: Storage, executor: JobExecutor): JobExecutor {
  return {
    run: (data: JobData, signal?: AbortSignal): Promise<JobResult> =>
      storage.runWithLocalFiles(data, (local) => executor.run(local, signal), signal),
  };
}
