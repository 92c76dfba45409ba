// Section 6: a state's burst (SPEC §7). Thousands of school returns (1,500 rows each) sent as one
// batch by `censo lote --servidor` to one API and one worker process on this machine, against the
// local `censo lote` on the same folder, in the same run. Meanwhile a probe makes synchronous
// uploads, one at a time, to see what the burst does to the people using the page; the API's and
// the worker's RSS are sampled to see whether they grow with the backlog. Redis memory per waiting
// task is measured on its own, with no worker, so that the tasks stay waiting.
import { linkSync, mkdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { schoolReturn } from './cli.mjs';
import { API_KEY, MULTIPART_TYPE, deploy, multipartBody } from './http.mjs';
import { DATA, ROOT, cpuSecondsOf, memoryOf, percentile, runNodeTimedCpu, sleep } from './lib.mjs';

const require = createRequire(import.meta.url);
const CLI = path.join('cli', 'dist', 'main.js');
export const PROBE_GAP_MS = 200;
const MEMORY_TASKS = 1000;

/** `count` hard links to one school's return, in 50 regional folders as a state's share would be. */
function burstFolder(one, count) {
  const dir = path.join(DATA, `burst${count}`);
  if (!existsSync(path.join(dir, 'regional-49', `escola-${count - 1}.xlsx`))) {
    rmSync(dir, { recursive: true, force: true });
    for (let i = 0; i < count; i++) {
      const folder = path.join(dir, `regional-${i % 50}`);
      mkdirSync(folder, { recursive: true });
      linkSync(one, path.join(folder, `escola-${i}.xlsx`));
    }
  }
  return dir;
}

async function redisCpuSeconds(redis) {
  const info = await redis.info('cpu');
  const read = (key) => Number(new RegExp(`${key}:([\\d.]+)`).exec(info)?.[1]);
  return read('used_cpu_sys') + read('used_cpu_user');
}

async function post(url, body) {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'x-api-key': API_KEY, 'content-type': MULTIPART_TYPE } });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0 };
}

/** Synchronous small uploads one after another until `until` resolves; their latencies. */
async function probe(url, body, until) {
  let done = false;
  until.finally(() => (done = true)).catch(() => {});
  const samples = [];
  const statuses = {};
  while (!done) {
    const r = await post(url, body);
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    if (r.status === 200) samples.push(r.ms);
    await sleep(PROBE_GAP_MS);
  }
  return { samples, statuses };
}

async function redisUsedMemory(redis) {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}

/** Bytes of Redis per waiting task: a batch of tasks posted to an API with no worker. */
async function redisPerWaitingTask(redisUrl, file) {
  const { Redis } = require('ioredis');
  const d = await deploy('burst-mem', 0, redisUrl, {}, { queue: true });
  const redis = new Redis(redisUrl);
  try {
    const content = readFileSync(file);
    const api = (route, init = {}) => fetch(`${d.url}${route}`, { ...init, headers: { 'x-api-key': API_KEY, ...init.headers } });
    const lote = await (await api('/api/lotes', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).json();
    const before = await redisUsedMemory(redis);
    for (let i = 0; i < MEMORY_TASKS; i += 4) {
      await Promise.all(
        [0, 1, 2, 3].map(async (k) => {
          const form = new FormData();
          form.append('referencia', `escola-${i + k}`);
          form.append('retorno', new Blob([content]), `escola-${i + k}.xlsx`);
          const res = await api(`/api/lotes/${lote.id}/divergencias-rf`, {
            method: 'POST',
            body: form,
            headers: { 'idempotency-key': `bench-${i + k}` },
          });
          await res.arrayBuffer();
          if (res.status !== 202) throw new Error(`a task was answered ${res.status}`);
        }),
      );
    }
    const after = await redisUsedMemory(redis);
    await (await api(`/api/lotes/${lote.id}`, { method: 'DELETE' })).arrayBuffer();
    return (after - before) / MEMORY_TASKS;
  } finally {
    redis.disconnect();
    await d.stop();
  }
}

export async function runBurst({ quick, redisUrl, files, log = console.log }) {
  const count = files ?? (quick ? 1000 : 5000);
  const { file: one, rowsPerFile } = await schoolReturn();
  const dir = burstFolder(one, count);
  const localOut = path.join(DATA, 'burst-local.csv');
  const serverOut = path.join(DATA, 'burst-servidor.csv');

  log(`  burst: local censo lote on ${count} files`);
  const local = await runNodeTimedCpu([CLI, '--quiet', 'lote', dir, '-o', localOut], { timeoutMs: 900_000 });
  log(`  burst: local ${(count / (local.ms / 1000)).toFixed(1)} files/s`);

  const perTaskBytes = await redisPerWaitingTask(redisUrl, one);
  log(`  burst: Redis ${(perTaskBytes / 1024).toFixed(1)} KiB per waiting task`);

  const { Redis } = require('ioredis');
  const redis = new Redis(redisUrl);
  const d = await deploy('burst', 1, redisUrl);
  try {
    const probeUrl = `${d.url}/api/divergencias-rf`;
    const small = multipartBody([
      { field: 'retorno', filename: 'retorno.json', content: readFileSync(path.join(ROOT, 'test/fixtures/basico/retorno.json')) },
    ]);
    // Idle: the same probe with nothing else running (after a warm-up).
    for (let i = 0; i < 10; i++) await post(probeUrl, small);
    const idle = await probe(probeUrl, small, sleep(quick ? 5_000 : 10_000));

    log(`  burst: censo lote --servidor on ${count} files`);
    const memory = d.processes.map(() => []);
    const sampler = setInterval(() => d.processes.forEach((p, i) => memory[i].push(memoryOf(p.pid).rss)), 500);
    const cpuBefore = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
    const run = runNodeTimedCpu([CLI, '--quiet', 'lote', dir, '--servidor', d.url, '--chave', API_KEY, '-o', serverOut], {
      timeoutMs: 1_800_000,
    });
    const during = await probe(probeUrl, small, run);
    const server = await run;
    clearInterval(sampler);
    const cpuAfter = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
    const [apiCpu, workerCpu, redisCpu] = cpuAfter.map((after, i) => after - cpuBefore[i]);
    // RSS in the first and the last third of the burst: flat means the backlog is not held in memory.
    const thirds = memory.map((xs) => {
      const n = Math.max(1, Math.floor(xs.length / 3));
      return { first: Math.max(...xs.slice(0, n)), last: Math.max(...xs.slice(-n)), peak: Math.max(...xs) };
    });
    const p95 = (xs) => percentile(xs, 95);
    return {
      files: count,
      rowsPerFile,
      local,
      server,
      // CPU seconds of each side of the burst (the probe's requests included in the API's and the worker's).
      cpu: { cli: server.cpu, api: apiCpu, worker: workerCpu, redis: redisCpu, local: local.cpu },
      ratio: local.ms / server.ms,
      api: thirds[0],
      worker: thirds[1],
      perTaskBytes,
      idle: { p50: percentile(idle.samples, 50), p95: p95(idle.samples), n: idle.samples.length, statuses: idle.statuses },
      during: { p50: percentile(during.samples, 50), p95: p95(during.samples), n: during.samples.length, statuses: during.statuses },
      p95Ratio: p95(during.samples) / p95(idle.samples),
      sameOutput: readFileSync(localOut).equals(readFileSync(serverOut)),
    };
  } finally {
    redis.disconnect();
    await d.stop();
  }
}
