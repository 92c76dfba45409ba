// The port between the HTTP layer and job execution. Two adapters implement it: `in-process`
// (no REDIS_URL: a worker-thread pool in this process) and `bullmq` (Queue + QueueEvents, the
// job runs in a separate worker). Both run the same job code, `runJob` from @censo/shared.
import type { JobData, JobResult } from '@censo/shared';

export interface RunOptions {
  /** Aborted when the client goes away: the job must be cancelled or removed if still queued. */
  readonly signal: AbortSignal;
  /** Epoch milliseconds after which the runner gives up with JobTimeoutError (504). */
  readonly deadline: number;
  /** Used as the job id (BullMQ) and in logs; unique per request. */
  readonly id: string;
}

export interface JobRunner {
  readonly mode: 'in-process' | 'bullmq';
  /**
   * Runs a job and resolves with its result. Rejects with JobTimeoutError past the deadline,
   * QueueUnavailableError when the queue cannot be reached, or the signal's reason when aborted.
   */
  run(data: JobData, options: RunOptions): Promise<JobResult>;
  /** For /readyz: whether the runner can take work now (Redis answers, for bullmq). */
  isReady(): Promise<boolean>;
  /** For /metrics: jobs in the queue by state (waiting, active, delayed, failed); bullmq only. */
  counts?(): Promise<Record<string, number>>;
  /** For /metrics: how many rests each shard has started (shard-choice.ts); QUEUE_SHARDS above 1 only. */
  shardRests?(): readonly number[];
  close(): Promise<void>;
}
