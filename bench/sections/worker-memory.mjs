// Section 2c: a worker process with two 25 MB jobs at once (bench/worker-memory.mjs).
import { fmt, table } from '../lib.mjs';
import { runWorkerMemory } from '../worker-memory.mjs';
import { MiB } from './report.mjs';

export async function workerMemorySection({ log, section, target, measure, data, redisUrl, redisVersion }) {
  log('\nWorker memory (two t25 jobs at once)...');
  const workerMemory = await measure(redisVersion, 'worker memory', () => runWorkerMemory(data, { redisUrl, log }));
  if (workerMemory) {
    const row = (kind) => {
      const r = workerMemory[kind];
      return [kind, fmt(r.idle), fmt(r.peak), fmt(r.apiPeak), fmt(r.ms), (r.bytes / MiB).toFixed(1)];
    };
    section(
      '2c. A worker process with two 25 MB jobs at once',
      [
        "Queue mode: one API and one worker process (`WORKER_CONCURRENCY=2`, so two job threads), the local Redis. Two t25 requests (txt 24.8 MiB + xlsx 14.6 MiB each) are sent at the same moment; the worker's peak RSS (`VmHWM`) is read when both answers are in. A fresh deployment per job kind.",
        '',
        table(
          ['job ×2', 'worker idle RSS MiB', 'worker peak RSS MiB', 'API peak RSS MiB', 'both answered ms', 'answer MiB'],
          [row('retorno-rf'), row('censo-corrigido')],
        ),
      ].join('\n'),
    );
    const peak = Math.max(workerMemory['retorno-rf'].peak, workerMemory['censo-corrigido'].peak);
    target(
      'a worker process with 2 threads holds two 25 MB jobs under 400 MiB',
      `${fmt(workerMemory['retorno-rf'].peak)} MiB (retorno-rf) / ${fmt(workerMemory['censo-corrigido'].peak)} MiB (censo-corrigido)`,
      peak < 400,
    );
  } else {
    section(
      '2c. A worker process with two 25 MB jobs at once',
      redisVersion ? '_Failed, see the console output._' : '_Redis not reachable: skipped._',
    );
  }
}
