// The embedded adapter of the tasks' execution port (tarefas/execution.ts): the in-process pool's
// runner behind a FIFO of its own. Queue mode's adapter is bullmq-tasks.ts.
import { JobTimeoutError, type JobData } from '@censo/shared';
import { freshIds, type JobObservation, type TaskExecution } from '../tarefas/execution.js';
import type { JobRunner } from './runner.js';

interface EmbeddedJob {
  readonly data: JobData;
  observation: JobObservation;
  controller: AbortController | null;
  /** Its end needs no recording (recorded already, or the task is gone): dropped once it stops. */
  forgotten: boolean;
}

/**
 * Embedded: a FIFO of its own in front of the in-process runner, starting at most `concurrency`
 * jobs at a time, so a burst of tasks never fills the pool's queue that synchronous requests use
 * (and a synchronous job waits at most for one running task per thread). Forgotten on restart.
 */
export function createEmbeddedExecution(runner: JobRunner, options: { concurrency: number; jobTimeoutMs: number }): TaskExecution {
  const jobs = new Map<string, EmbeddedJob>();
  const queue: string[] = [];
  const listeners: ((id: string) => void)[] = [];
  let running = 0;
  let closed = false;

  const settle = (id: string, job: EmbeddedJob, observation: JobObservation) => {
    job.observation = observation;
    job.controller = null;
    running--;
    if (job.forgotten) jobs.delete(id);
    pump();
    for (const listener of listeners) listener(id);
  };

  function start(id: string, job: EmbeddedJob): void {
    const startedAt = Date.now();
    const controller = new AbortController();
    job.controller = controller;
    job.observation = { state: 'active', startedAt };
    running++;
    runner.run(job.data, { signal: controller.signal, id, deadline: startedAt + options.jobTimeoutMs }).then(
      (result) => settle(id, job, { state: 'done', startedAt, finishedAt: Date.now(), result }),
      (err: unknown) => {
        const why = controller.signal.aborted ? 'cancelled' : err instanceof JobTimeoutError ? 'timeout' : 'error';
        settle(id, job, { state: 'failed', startedAt, finishedAt: Date.now(), why });
      },
    );
  }

  function pump(): void {
    while (!closed && running < options.concurrency && queue.length > 0) {
      const id = queue.shift()!;
      const job = jobs.get(id);
      if (job?.observation.state === 'waiting') start(id, job);
    }
  }

  return {
    mode: 'in-process',
    // One thread's FIFO in this process: nothing to share between tasks.
    groupSize: async () => 1,
    idSource: () => freshIds,
    async submit(submitted) {
      for (const { id, data } of submitted) {
        jobs.set(id, { data, observation: { state: 'waiting' }, controller: null, forgotten: false });
        queue.push(id);
      }
      pump();
    },
    async inspect({ id }) {
      return jobs.get(id)?.observation ?? { state: 'missing' };
    },
    async inspectAll(tasks) {
      return tasks.map(({ id }) => jobs.get(id)?.observation ?? { state: 'missing' });
    },
    async cancel({ id }) {
      const job = jobs.get(id);
      if (!job) return;
      if (job.observation.state === 'waiting') {
        jobs.delete(id);
        const at = queue.indexOf(id);
        if (at >= 0) queue.splice(at, 1);
      } else if (job.observation.state === 'active') {
        job.forgotten = true;
        job.controller?.abort(new Error('task cancelled'));
      } else {
        jobs.delete(id);
      }
    },
    async forget(tasks) {
      for (const { id } of tasks) {
        const job = jobs.get(id);
        if (!job) continue;
        if (job.observation.state === 'active') job.forgotten = true;
        else if (job.observation.state !== 'waiting') jobs.delete(id);
      }
    },
    async waiting() {
      return queue.length;
    },
    async running() {
      const out = new Map<string, number>();
      for (const [id, job] of jobs) if (job.observation.state === 'active') out.set(id, job.observation.startedAt);
      return out;
    },
    onSettled(listener) {
      listeners.push(listener);
    },
    async close() {
      closed = true;
      for (const job of jobs.values()) job.controller?.abort(new Error('closing'));
    },
  };
}
