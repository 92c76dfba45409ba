// Where asynchronous tasks' records live and what runs their jobs (SPEC §7.5), chosen with the
// mode once, where the process starts (server.ts): embedded, the memory store and the in-process
// pool; queue mode, the Redis store beside the queue and the BullMQ tasks' queue. The tarefas
// plugin takes the backend it is given and never asks which mode it is in. The queue mode's
// factory is in queue-task-backend.ts, loaded only in that mode (as BullMQ itself).
import type { Config } from '@censo/shared';
import type { TaskExecution } from '../tarefas/execution.js';
import type { TarefaStore } from '../tarefas/store.js';
import { createMemoryStore } from '../tarefas/store-memory.js';
import { createEmbeddedExecution } from './embedded-tasks.js';
import type { JobRunner } from './runner.js';

export interface TaskBackend {
  readonly store: TarefaStore;
  readonly execution: TaskExecution;
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
    async close() {
      await execution.close();
      if (ownsRunner) await runner.close();
    },
  };
}
