// Where asynchronous tasks' records live and what runs their jobs (SPEC §7.5), chosen with the
// mode once, where the process starts (server.ts): embedded, the memory store and the in-process
// pool; queue mode, the Redis store beside the queue and the BullMQ tasks' queue. The tarefas
// plugin takes the backend it is given and never asks which mode it is in. The queue mode's
// factory is in queue-task-backend.ts, loaded only in that mode (as BullMQ itself).
// The same decision says where the rest of what every API replica must see alike lives (staff
// sessions, rate-limit counters): `shared`, read by those plugins instead of asking the config.
import type { Config, RedisConfig } from '@censo/shared';
import type { TaskExecution } from '../tarefas/execution.js';
import type { TarefaStore } from '../tarefas/store.js';
import { createMemoryStore } from '../tarefas/store-memory.js';
import { createEmbeddedExecution } from './embedded-tasks.js';
import type { JobRunner } from './runner.js';

/** The queue's Redis and its key prefix, where queue mode keeps what API replicas share. */
export interface SharedRedis {
  readonly redis: RedisConfig;
  readonly prefix: string;
}

export interface TaskBackend {
  readonly store: TarefaStore;
  readonly execution: TaskExecution;
  /** Where sessions and rate-limit counters live: null in embedded mode (this process), the queue's Redis in queue mode. */
  readonly shared: SharedRedis | null;
  /** What the app closes with it: the embedded execution (and its runner, when it owns it); nothing in queue mode (its runner closes it). */
  close(): Promise<void>;
}

export interface EmbeddedTaskOptions {
  /** The store's clock (tests play time forward); default Date.now. */
  readonly now?: () => number;
  /** The runner is the tasks' own (a pool at BATCH_NICENESS), closed with the backend. */
  readonly ownsRunner?: boolean;
}

/** Embedded: records in this process (forgotten on restart), jobs on `runner`'s pool. */
export function embeddedTaskBackend(
  runner: JobRunner,
  config: Pick<Config, 'workerConcurrency' | 'jobTimeoutMs'>,
  { now, ownsRunner = false }: EmbeddedTaskOptions = {},
): TaskBackend {
  const execution = createEmbeddedExecution(runner, { concurrency: config.workerConcurrency, jobTimeoutMs: config.jobTimeoutMs });
  return {
    store: createMemoryStore(now),
    execution,
    shared: null,
    async close() {
      await execution.close();
      if (ownsRunner) await runner.close();
    },
  };
}
