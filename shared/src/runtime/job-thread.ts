// Entry module of the job pool's worker threads (piscina calls the default export per task).
import { runJob } from '../core/job.js';
import type { JobData, JobResult } from '../core/types.js';

export default function runJobInThread(data: JobData): Promise<JobResult> {
  return runJob(data);
}
