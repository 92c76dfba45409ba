// Section 6: a state's burst (SPEC §7, issues 35 and 47). Thousands of school returns (1,500 rows each)
// sent as one batch by `censo lote --servidor` to one API and one worker process on this machine,
// against the local `censo lote` on the same folder, in the same run. The service runs twice on
// the same folder: the whole tree as it was before issue 47's work (BURST_BEFORE_REV, built beside
// the current one by before.mjs `treeAt`: its CLI, API and worker), then the current build.
// Meanwhile a probe makes synchronous uploads, one at a time, to see what the burst does to the
// people using the page; the API's, the worker's and the CLI's RSS are sampled to see whether they
// grow with the backlog. Redis memory per waiting task is measured on its own, with no worker, so
// that the tasks stay waiting.
//
// `runBurst({ files: 50000, serviceOnly: true })` is the large case: the current build alone, no
// local run and no probe, every process's RSS and Redis's memory sampled, then the batch's combined
// CSV downloaded while the API's RSS is sampled. `node bench/burst.mjs [--files N]` runs that case
// alone (after `npm run build`; N defaults to 50,000) and prints its JSON; with `--compare` it runs
// the whole section instead (local, before, now) on N files, `--now-only` leaving out the before.
// `--tiny` measures the per-task bookkeeping alone (runTiny). `BENCH_CPU_PROF=<folder>` profiles
// the API, the worker and the CLI (`node bench/profile-summary.mjs <folder>` reads them).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, existsSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BURST_BEFORE_REV, treeAt } from './before.mjs';
import { schoolReturn } from './cli.mjs';
import { measureJobCost } from './job-cost.mjs';
import { API_KEY, MULTIPART_TYPE, deploy, multipartBody } from './http.mjs';
import { DATA, ROOT, cpuSecondsOf, memoryOf, percentile, profileArgs, sleep } from './lib.mjs';

const require = createRequire(import.meta.url);
const CLI = path.join(ROOT, 'cli', 'dist', 'main.js');
export const PROBE_GAP_MS = 200;
const MEMORY_TASKS = 1000;
/** Returns a request as the current CLI sends a folder (GROUP_FILES in cli/src/servidor.ts). */
const CLI_GROUP_FILES = 50;
/** Files of the large case, and its sampling interval (the run takes many minutes). */
// BENCH_BIG_FILES sets it (a 50,000-file run takes about a quarter of an hour on 2 cores).
export const BIG_FILES = Number(process.env.BENCH_BIG_FILES ?? 50_000);
const BIG_SAMPLE_MS = 1000;

/**
 * `count` hard links in 50 regional folders, as a state's share would be, all to one copy of the
 * school's return of the folder's own (ext4 takes at most 65,000 links to a file, and sections 5
 * and 6 link the same return into several folders).
 */
function burstFolder(one, count) {
  const dir = path.join(DATA, `burst${count}`);
  if (!existsSync(path.join(dir, 'regional-49', `escola-${count - 1}.xlsx`))) {
    rmSync(dir, { recursive: true, force: true });
    const source = path.join(DATA, `burst${count}-source.xlsx`);
    copyFileSync(one, source);
    for (let i = 0; i < count; i++) {
      const folder = path.join(dir, `regional-${i % 50}`);
      mkdirSync(folder, { recursive: true });
      linkSync(source, path.join(folder, `escola-${i}.xlsx`));
    }
  }
  return dir;
}

async function redisCpuSeconds(redis) {
  const info = await redis.info('cpu');
  const read = (key) => Number(new RegExp(`${key}:([\\d.]+)`).exec(info)?.[1]);
  return read('used_cpu_sys') + read('used_cpu_user');
}

async function redisUsedMemory(redis) {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
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

/** Newlines in a chunk (memchr through Buffer#indexOf). */
function newlines(chunk) {
  let n = 0;
  for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}

/** A file's bytes and lines, read as a stream. */
async function linesOf(file) {
  let lines = 0;
  for await (const chunk of createReadStream(file)) lines += newlines(chunk);
  return { bytes: statSync(file).size, lines };
}

async function sha256Of(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/** The CLI's line for a file it could not finish (`censo: "<path>": <why>`). */
const FILE_FAILURE = /^censo: "[^"]+": .*$/gm;

/**
 * Runs `node <args>` to completion: its wall time in ms, the CPU seconds of all its threads (from
 * /proc every 100 ms until it exits) and its RSS in MiB every `rssMs`. Exit 0 is required, or, with
 * `fileFailures`, exit 1 when stderr names the files that failed (`censo lote` finished the rest):
 * those lines are returned in `failed`, so that a long run is reported with its failures instead of
 * lost.
 */
function runNodeSampled(args, { timeoutMs, rssMs = 500, fileFailures = false }) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...profileArgs('cli'), ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    let cpu = 0;
    const rss = [];
    const cpuSampler = setInterval(() => (cpu = cpuSecondsOf(child.pid) || cpu), 100);
    const rssSampler = setInterval(() => {
      const { rss: mib } = memoryOf(child.pid);
      if (Number.isFinite(mib)) rss.push(mib);
    }, rssMs);
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearInterval(cpuSampler);
      clearInterval(rssSampler);
      const failed = err.match(FILE_FAILURE) ?? [];
      if (code === 0 || (fileFailures && code === 1 && failed.length > 0))
        resolve({ ms: performance.now() - started, cpu, rss, exitCode: code, failed });
      else reject(new Error(`node ${args.join(' ')} exited ${code ?? signal}: ${err.trim().slice(-2000)}`));
    });
  });
}

/** The largest sample of the first third, of the last third, and of all (flat: last ≈ first). */
function thirds(xs) {
  if (xs.length === 0) return { first: NaN, last: NaN, peak: NaN, samples: 0 };
  const n = Math.max(1, Math.floor(xs.length / 3));
  return { first: Math.max(...xs.slice(0, n)), last: Math.max(...xs.slice(-n)), peak: Math.max(...xs), samples: xs.length };
}

/**
 * Bytes of Redis per waiting task: 1,000 tasks posted to an API with no worker, `perRequest`
 * returns a request (1: as every build takes them; more: as the current CLI sends them, which the
 * service before issue 35 refuses). With one a request, the same batch then gets one request
 * holding two returns: the service before issue 35 refuses it (400, a field sent twice), the
 * current one takes it (202), which tells that the deployment runs the build it is said to.
 */
async function redisPerWaitingTask(redisUrl, file, build, perRequest = 1) {
  const { Redis } = require('ioredis');
  const d = await deploy(`burst-mem-${build.name}-${perRequest}`, 0, redisUrl, build.env ?? {}, { queue: true, apiMain: build.apiMain });
  const redis = new Redis(redisUrl);
  try {
    const content = readFileSync(file);
    const api = (route, init = {}) => fetch(`${d.url}${route}`, { ...init, headers: { 'x-api-key': API_KEY, ...init.headers } });
    const lote = await (await api('/api/lotes', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).json();
    const sendTasks = async (first, count, key) => {
      const form = new FormData();
      for (let i = first; i < first + count; i++) {
        form.append('referencia', `escola-${i}`);
        form.append('retorno', new Blob([content]), `escola-${i}.xlsx`);
      }
      const res = await api(`/api/lotes/${lote.id}/divergencias-rf`, { method: 'POST', body: form, headers: { 'idempotency-key': key } });
      return { status: res.status, answer: await res.text() };
    };
    // Requests in flight at once: 4 of one file, as before; one of several, as the current CLI sends them.
    const parallel = perRequest === 1 ? 4 : 1;
    const before = await redisUsedMemory(redis);
    for (let i = 0; i < MEMORY_TASKS; i += perRequest * parallel) {
      await Promise.all(
        Array.from({ length: parallel }, async (_, k) => {
          const first = i + k * perRequest;
          const count = Math.min(perRequest, MEMORY_TASKS - first);
          if (count <= 0) return;
          const { status, answer } = await sendTasks(first, count, `bench-${first}`);
          if (status !== 202) throw new Error(`${count} task(s) were answered ${status}: ${answer.slice(0, 200)}`);
        }),
      );
    }
    const after = await redisUsedMemory(redis);
    let twoReturns = null;
    if (perRequest === 1) {
      const { status, answer } = await sendTasks(MEMORY_TASKS, 2, 'bench-dupla');
      twoReturns = { status, erro: status === 202 ? null : (safeJson(answer)?.erro ?? answer.slice(0, 200)) };
    }
    await (await api(`/api/lotes/${lote.id}`, { method: 'DELETE' })).arrayBuffer();
    return { perTaskBytes: (after - before) / MEMORY_TASKS, twoReturns };
  } finally {
    redis.disconnect();
    await d.stop();
  }
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The service's builds: the whole tree at BURST_BEFORE_REV (unless `nowOnly`), then the current
 * one with a queue job per task (TAREFAS_POR_JOB=1), then the current one with group jobs as it
 * is deployed by default since issue 47 (TAREFAS_POR_JOB at the CLI's request size: one job per request).
 */
function builds(nowOnly) {
  // A queue job per task, the default before issue 47 (and the tree at BURST_BEFORE_REV's).
  const now = { name: 'now', rev: null, apiMain: undefined, workerMain: undefined, cliMain: CLI, env: { TAREFAS_POR_JOB: '1' } };
  const grupos = { ...now, name: 'grupos', env: { TAREFAS_POR_JOB: String(CLI_GROUP_FILES) } };
  // BENCH_GROUPS_FIRST: the group jobs' run before the default one (this VM's journal-less disk
  // makes each run pay for the files the previous one deleted in its last minute).
  if (nowOnly) return process.env.BENCH_GROUPS_FIRST ? [grupos, now] : [now, grupos];
  const tree = treeAt(BURST_BEFORE_REV);
  return [
    { name: 'before', rev: BURST_BEFORE_REV, apiMain: tree.apiMain, workerMain: tree.workerMain, cliMain: tree.cliMain },
    now,
    grupos,
  ];
}

/** One build's burst: its own deployment, the idle probe, then the folder through its CLI. */
async function serviceBurst(build, { dir, count, quick, redisUrl, local, localDigest, log }) {
  const { Redis } = require('ioredis');
  const redis = new Redis(redisUrl);
  const d = await deploy(`burst-${build.name}`, 1, redisUrl, build.env ?? {}, { apiMain: build.apiMain, workerMain: build.workerMain });
  const out = path.join(DATA, `burst-servidor-${build.name}.csv`);
  try {
    const probeUrl = `${d.url}/api/divergencias-rf`;
    const small = multipartBody([
      { field: 'retorno', filename: 'retorno.json', content: readFileSync(path.join(ROOT, 'test/fixtures/basico/retorno.json')) },
    ]);
    // Idle: the same probe on this deployment with nothing else running (after a warm-up).
    for (let i = 0; i < 10; i++) await post(probeUrl, small);
    const idle = await probe(probeUrl, small, sleep(quick ? 5_000 : 10_000));

    log(`  burst: censo lote --servidor on ${count} files (${build.rev ?? 'current build'})`);
    const memory = d.processes.map(() => []);
    const sampler = setInterval(() => d.processes.forEach((p, i) => memory[i].push(memoryOf(p.pid).rss)), 500);
    const cpuBefore = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
    const run = runNodeSampled([build.cliMain, '--quiet', 'lote', dir, '--servidor', d.url, '--chave', API_KEY, '-o', out], {
      timeoutMs: 1_800_000,
      fileFailures: true,
    });
    const during = await probe(probeUrl, small, run);
    const server = await run;
    clearInterval(sampler);
    const cpuAfter = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
    const [apiCpu, workerCpu, redisCpu] = cpuAfter.map((after, i) => after - cpuBefore[i]);
    const cpu = { cli: server.cpu, api: apiCpu, worker: workerCpu, redis: redisCpu };
    cpu.total = cpu.cli + cpu.api + cpu.worker + cpu.redis;
    const sameOutput = (await sha256Of(out)) === localDigest;
    // A copy that matches the local one is not kept (425 MiB at 5,000 files).
    if (sameOutput) rmSync(out, { force: true });
    const p95 = (xs) => percentile(xs, 95);
    const result = {
      rev: build.rev,
      server: { ms: server.ms, cpu: server.cpu },
      filesPerSec: count / (server.ms / 1000),
      // Rate against the local run (same files, same run): > 1 is faster than local.
      ratio: local.ms / server.ms,
      // CPU seconds of each side of the burst (the probe's requests included in the API's and the worker's).
      cpu,
      cpuPerFileMs: (cpu.total * 1000) / count,
      cpuVsLocal: cpu.total / local.cpu,
      // RSS in the first and the last third of the burst: flat means the backlog is not held in memory.
      api: thirds(memory[0]),
      worker: thirds(memory[1]),
      cli: thirds(server.rss),
      idle: { p50: percentile(idle.samples, 50), p95: p95(idle.samples), n: idle.samples.length, statuses: idle.statuses },
      during: { p50: percentile(during.samples, 50), p95: p95(during.samples), n: during.samples.length, statuses: during.statuses },
      p95Ratio: p95(during.samples) / p95(idle.samples),
      sameOutput,
      // Files the CLI reported as failed (exit 1): a defect of the service, shown in the report.
      failedFiles: server.failed.length,
      failures: server.failed.slice(0, 5),
    };
    log(
      `  burst: ${build.rev ?? 'now'} ${result.filesPerSec.toFixed(1)} files/s (${result.ratio.toFixed(2)}× local), CPU ${result.cpuVsLocal.toFixed(2)}× local, p95 ${result.p95Ratio.toFixed(2)}× idle`,
    );
    return result;
  } finally {
    redis.disconnect();
    await d.stop();
  }
}

/** The digest of `censo lote` of `dir` as the CLI of `build`'s tree writes it locally (untimed). */
async function treeLocalDigest(build, dir) {
  const out = path.join(DATA, `burst-local-${build.rev}.csv`);
  await runNodeSampled([build.cliMain, '--quiet', 'lote', dir, '-o', out], { timeoutMs: 900_000 });
  const digest = await sha256Of(out);
  rmSync(out, { force: true });
  return digest;
}

/**
 * Section 6. `files` (default 5,000, 1,000 with `quick`) school returns through the local `censo
 * lote`, then through the service at BURST_BEFORE_REV, then through the current one; with
 * `serviceOnly`, the large case instead (runBig).
 */
export async function runBurst({ quick, redisUrl, files, serviceOnly = false, nowOnly = false, log = console.log }) {
  if (serviceOnly) return runBig({ files: files ?? BIG_FILES, redisUrl, log });
  const count = files ?? (quick ? 1000 : 5000);
  const { file: one, rowsPerFile } = await schoolReturn();
  const dir = burstFolder(one, count);
  const service = builds(nowOnly);
  const localOut = path.join(DATA, 'burst-local.csv');

  log(`  burst: local censo lote on ${count} files`);
  const localRun = await runNodeSampled([CLI, '--quiet', 'lote', dir, '-o', localOut], { timeoutMs: 900_000 });
  const local = {
    ms: localRun.ms,
    cpu: localRun.cpu,
    filesPerSec: count / (localRun.ms / 1000),
    cpuPerFileMs: (localRun.cpu * 1000) / count,
  };
  const localDigest = await sha256Of(localOut);
  log(`  burst: local ${local.filesPerSec.toFixed(1)} files/s`);
  // What the worker's share is made of: the same return as one job, alone in a process.
  const jobCost = await measureJobCost({ source: one, files: quick ? 100 : 300 });
  log(
    `  burst: one job ${jobCost.direta.cpuMsPerFile.toFixed(2)} ms a file as a direct task, ${jobCost.lote.cpuMsPerFile.toFixed(2)} as a batch's`,
  );

  const results = {};
  for (const build of service) {
    results[build.name] = { groupFiles: CLI_GROUP_FILES };
    // Group jobs only carry requests of several returns: one a request is the default build's figure.
    if (build.name !== 'grupos') {
      const memory = await redisPerWaitingTask(redisUrl, one, build);
      log(`  burst: Redis ${(memory.perTaskBytes / 1024).toFixed(2)} KiB per waiting task (${build.rev ?? build.name})`);
      Object.assign(results[build.name], memory);
    }
    // The current build also as its CLI sends a folder: several returns a request.
    if (build.rev === null) {
      const grouped = await redisPerWaitingTask(redisUrl, one, build, CLI_GROUP_FILES);
      results[build.name].perTaskBytesGrouped = grouped.perTaskBytes;
      log(`  burst: Redis ${(grouped.perTaskBytes / 1024).toFixed(2)} KiB per waiting task (${build.name}, ${CLI_GROUP_FILES} a request)`);
    }
  }
  for (const build of service) {
    // An earlier tree's service is held to its own CLI's local output: the answer's columns have
    // changed since (issues 46 and 56), so the current local file would call every earlier one different.
    const ownDigest = build.rev === null ? localDigest : await treeLocalDigest(build, dir);
    Object.assign(results[build.name], await serviceBurst(build, { dir, count, quick, redisUrl, local, localDigest: ownDigest, log }));
  }
  return {
    files: count,
    rowsPerFile,
    beforeRev: BURST_BEFORE_REV,
    local,
    jobCost,
    before: results.before,
    now: results.now,
    grupos: results.grupos,
  };
}

/**
 * What one task costs the service apart from its return: `files` returns of one divergence each
 * (a few hundred bytes, a job of almost nothing) through the current build as one batch, against
 * the local `censo lote` on the same folder. The CPU a file is then the per-task bookkeeping: the
 * CLI's part and request, the API's storage area, records and end, the BullMQ job and its events,
 * the worker's hand-off, Redis. `node bench/burst.mjs --tiny [--files N]` (N defaults to 2,000).
 */
async function runTiny({ files, redisUrl, log }) {
  const { Redis } = require('ioredis');
  const dir = path.join(DATA, `tiny${files}`);
  if (!existsSync(path.join(dir, 'regional-49', `escola-${files - 1}.json`))) {
    rmSync(dir, { recursive: true, force: true });
    const one = JSON.stringify([
      {
        Registro: '30',
        Linha: '2',
        'Código na Escola': 'ALU000001',
        Campo: 'Data de nascimento',
        Mensagem: 'O campo não está de acordo com a base da Receita Federal.',
        Conteúdo: '14/03/2014 -- "15/03/2014"',
      },
    ]);
    for (let i = 0; i < files; i++) {
      const folder = path.join(dir, `regional-${i % 50}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, `escola-${i}.json`), one);
    }
  }
  log(`  burst: ${files} one-divergence returns, local censo lote`);
  const local = await runNodeSampled([CLI, '--quiet', 'lote', dir, '-o', path.join(DATA, 'tiny-local.csv')], { timeoutMs: 300_000 });
  const redis = new Redis(redisUrl);
  const perFile = (seconds) => (seconds * 1000) / files;
  // The default deployment (a queue job per task), then one job per request of the CLI's.
  const through = async (name, env) => {
    const d = await deploy(`tiny-${files}-${name}`, 1, redisUrl, env);
    try {
      log(`  burst: the same through the service (${name})`);
      const cpuBefore = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
      const server = await runNodeSampled(
        [CLI, '--quiet', 'lote', dir, '--servidor', d.url, '--chave', API_KEY, '-o', path.join(DATA, 'tiny-servidor.csv')],
        { timeoutMs: 900_000 },
      );
      const [api, worker, redisCpu] = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)].map(
        (after, i) => after - cpuBefore[i],
      );
      const cpu = { cli: perFile(server.cpu), api: perFile(api), worker: perFile(worker), redis: perFile(redisCpu) };
      return { ms: server.ms, cpuPerFileMs: { ...cpu, total: cpu.cli + cpu.api + cpu.worker + cpu.redis } };
    } finally {
      await d.stop();
    }
  };
  try {
    const runs = { service: () => through('tarefa', {}), grupos: () => through('grupos', { TAREFAS_POR_JOB: String(CLI_GROUP_FILES) }) };
    const order = process.env.BENCH_GROUPS_FIRST ? ['grupos', 'service'] : ['service', 'grupos'];
    const measured = {};
    for (const name of order) measured[name] = await runs[name]();
    return { mode: 'tiny', files, local: { ms: local.ms, cpuPerFileMs: perFile(local.cpu) }, order, ...measured };
  } finally {
    redis.disconnect();
  }
}

/**
 * The large case: `files` returns as one batch through the current build alone. The API's, the
 * worker's and the CLI's RSS and Redis's `used_memory` are sampled every second during the run;
 * then the batch's combined CSV (`GET /api/lotes/{id}/divergencias?format=csv`) is read into a
 * hash while the API's RSS is sampled every 50 ms.
 */
async function runBig({ files, redisUrl, log }) {
  const { Redis } = require('ioredis');
  const { file: one, rowsPerFile } = await schoolReturn();
  log(`  burst: ${files} hard links`);
  const dir = burstFolder(one, files);
  const out = path.join(DATA, `burst${files}-servidor.csv`);
  const redis = new Redis(redisUrl);
  // With group jobs at the CLI's request size, as a state's bursts are meant to run; BENCH_TAREFAS_POR_JOB=1 for a job per task.
  const tarefasPorJob = Number(process.env.BENCH_TAREFAS_POR_JOB ?? CLI_GROUP_FILES);
  const d = await deploy(`burst-${files}`, 1, redisUrl, { TAREFAS_POR_JOB: String(tarefasPorJob) });
  try {
    const redisBefore = await redisUsedMemory(redis);
    const memory = d.processes.map(() => []);
    const redisMemory = [];
    const sampler = setInterval(() => {
      d.processes.forEach((p, i) => memory[i].push(memoryOf(p.pid).rss));
      redisUsedMemory(redis).then(
        (bytes) => redisMemory.push(bytes),
        () => {},
      );
    }, BIG_SAMPLE_MS);
    const cpuBefore = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
    log(`  burst: censo lote --servidor on ${files} files (current build, no probe)`);
    const server = await runNodeSampled([CLI, '--quiet', 'lote', dir, '--servidor', d.url, '--chave', API_KEY, '-o', out], {
      timeoutMs: 4 * 3600_000,
      rssMs: BIG_SAMPLE_MS,
      fileFailures: true,
    });
    if (server.failed.length > 0) log(`  burst: ${server.failed.length} files failed, e.g. ${server.failed[0]}`);
    clearInterval(sampler);
    const cpuAfter = [...d.processes.map((p) => cpuSecondsOf(p.pid)), await redisCpuSeconds(redis)];
    const [apiCpu, workerCpu, redisCpu] = cpuAfter.map((after, i) => after - cpuBefore[i]);
    const cpu = { cli: server.cpu, api: apiCpu, worker: workerCpu, redis: redisCpu };
    cpu.total = cpu.cli + cpu.api + cpu.worker + cpu.redis;
    // The CLI's combined CSV has the route's columns less `referencia`: their rows are compared.
    const cliOutput = await linesOf(out);
    rmSync(out, { force: true });
    log(`  burst: ${(files / (server.ms / 1000)).toFixed(1)} files/s; downloading the combined CSV`);

    // The batch: the bench key's newest.
    const headers = { 'x-api-key': API_KEY };
    const listing = await (await fetch(`${d.url}/api/lotes?limit=1`, { headers })).json();
    const lote = listing.lotes?.[0]?.id;
    if (!lote) throw new Error(`GET /api/lotes?limit=1 listed no batch: ${JSON.stringify(listing).slice(0, 300)}`);
    const rssBefore = memoryOf(d.api.pid).rss;
    const downloadRss = [];
    const downloadSampler = setInterval(() => downloadRss.push(memoryOf(d.api.pid).rss), 50);
    const apiCpuBefore = cpuSecondsOf(d.api.pid);
    const t0 = performance.now();
    let res = await fetch(`${d.url}/api/lotes/${lote}/divergencias?format=csv`, { headers });
    // A batch some of whose tasks never got their end recorded is not whole (409): what there is.
    const parcial = res.status === 409;
    if (parcial) {
      await res.arrayBuffer();
      res = await fetch(`${d.url}/api/lotes/${lote}/divergencias?format=csv&parcial=true`, { headers });
    }
    const hash = createHash('sha256');
    let bytes = 0;
    let lines = 0;
    for await (const chunk of res.body) {
      hash.update(chunk);
      bytes += chunk.length;
      lines += newlines(chunk);
    }
    const downloadMs = performance.now() - t0;
    // The API's CPU for the whole combined answer: the part of a burst's cost the results' form sets.
    const downloadApiCpu = cpuSecondsOf(d.api.pid) - apiCpuBefore;
    clearInterval(downloadSampler);
    downloadRss.push(memoryOf(d.api.pid).rss);
    const digest = hash.digest('hex');
    return {
      mode: 'service-only',
      files,
      tarefasPorJob,
      rowsPerFile,
      server: { ms: server.ms, cpu: server.cpu },
      filesPerSec: files / (server.ms / 1000),
      cpu,
      cpuPerFileMs: (cpu.total * 1000) / files,
      api: thirds(memory[0]),
      worker: thirds(memory[1]),
      cli: thirds(server.rss),
      // Redis's used_memory (bytes): before the run, and the first third, last third and peak of it.
      redis: { before: redisBefore, ...thirds(redisMemory) },
      cliOutput,
      // Files the CLI reported as failed (exit 1): a defect of the service, shown in the report.
      failedFiles: server.failed.length,
      failures: server.failed.slice(0, 5),
      download: {
        lote,
        status: res.status,
        parcial,
        bytes,
        ms: downloadMs,
        apiCpuS: downloadApiCpu,
        lines,
        sha256: digest,
        // One line a divergence and a header in both: the same rows as the CLI wrote.
        sameRowsAsCli: lines === cliOutput.lines,
        apiRssBeforeMB: rssBefore,
        apiRssPeakMB: Math.max(rssBefore, ...downloadRss),
        samples: downloadRss.length,
      },
    };
  } finally {
    rmSync(out, { force: true });
    redis.disconnect();
    await d.stop();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : process.argv[i + 1];
  };
  const files = arg('--files') === undefined ? undefined : Number(arg('--files'));
  const compare = process.argv.includes('--compare');
  const tiny = process.argv.includes('--tiny');
  // With --compare: the current build alone against the local run (no tree at BURST_BEFORE_REV).
  const nowOnly = process.argv.includes('--now-only');
  const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  mkdirSync(path.join(DATA, 'logs'), { recursive: true });
  const log = (...a) => console.error(...a);
  const result = tiny
    ? await runTiny({ files: files ?? 2000, redisUrl, log })
    : await runBurst({ files, redisUrl, serviceOnly: !compare, nowOnly, log });
  console.log(JSON.stringify(result));
}
