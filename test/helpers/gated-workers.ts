// Workers of a test's own on a harness's queue (the group suites: tarefas-grupos, tarefas-partilha):
// one slot each, the job pool behind a gate so the test decides who runs what, and everything
// they started closed after each test.
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { createJobPool, type JobExecutor, type JobPool } from '@censo/shared';
import { startWorker, type RunningWorker } from '@censo/worker';
import { logLines } from './log-lines.js';
import { gated, type Gate, type Harness } from './tarefas.js';

export interface GatedWorkers {
  /** A harness to dispose of after the test. */
  track(server: Harness): Harness;
  /**
   * A worker of one slot on `server`'s queue, with its job pool behind `gate` (or `around` the
   * pool, when given), and its log lines.
   */
  worker(
    server: Harness,
    gate: Gate,
    options?: { contractVersion?: number; around?: (pool: JobPool) => JobExecutor },
  ): Promise<{ running: RunningWorker; lines: Array<Record<string, unknown>> }>;
}

export function useGatedWorkers(): GatedWorkers {
  const harnesses: Harness[] = [];
  const workers: RunningWorker[] = [];
  const pools: JobPool[] = [];
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.close();
    for (const harness of harnesses.splice(0)) await harness.dispose();
    for (const pool of pools.splice(0)) await pool.close();
  });
  return {
    track(server) {
      harnesses.push(server);
      return server;
    },
    async worker(server, gate, options = {}) {
      const { lines, sink } = logLines();
      const pool = createJobPool({ threads: 1, maxQueue: 16 });
      pools.push(pool);
      const running = await startWorker({ ...server.config, workerConcurrency: 1 }, pino({ level: 'info' }, sink), {
        executor: options.around ? options.around(pool) : gated(pool, gate),
        storage: server.storage,
        drainMs: 300,
        ...(options.contractVersion === undefined ? {} : { contractVersion: options.contractVersion }),
      });
      workers.push(running);
      await running.waitUntilReady();
      return { running, lines };
    },
  };
}
