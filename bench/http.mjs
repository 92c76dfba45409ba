// Section 3: end to end over HTTP (loopback), driven by autocannon's programmatic API with
// prebuilt multipart bodies. Modes: embedded (one process, worker-thread pool), and queue mode
// (the API with --role=api plus 1 or 2 worker processes over BullMQ/Redis).
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DATA, ROOT, deleteRedisPrefix, median, memoryOf, sleep, startProcess, waitFor } from './lib.mjs';

const require = createRequire(import.meta.url);
const autocannon = require('autocannon');

export const API_KEY = 'bench-key';
const BOUNDARY = '----censobenchboundary7MA4YWxkTrZu0gW';
export const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const API_MAIN = path.join(ROOT, 'services/api/dist/main.js');
const WORKER_MAIN = path.join(ROOT, 'services/worker/dist/main.js');

export function multipartBody(files) {
  const parts = [];
  for (const { field, filename, content } of files) {
    parts.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
    );
    parts.push(content, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(parts);
}

export function cannon(opts) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        ...opts,
        method: 'POST',
        headers: { 'content-type': MULTIPART_TYPE, 'x-api-key': API_KEY, ...opts.headers },
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    // A request whose response never came counts as an error; nothing is retried.
    instance.on('error', () => {});
  });
}

export function summarize(r) {
  const ok = r['2xx'];
  const total = ok + r.non2xx;
  return {
    requests: total,
    ok,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    seconds: r.duration,
    reqPerSec: total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    mean: r.latency.average,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count])),
  };
}

/** A port nothing listens on now: fixed ports met another checkout's bench on the same machine. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts one deployment; returns its URL, processes and a stop function. `env`: extra settings.
 * `workers` 0 is the embedded mode unless `queue` is set: then an API alone on the queue, whose
 * jobs wait (bench/burst.mjs measures Redis memory per waiting task that way).
 */
/**
 * The service as processes. `sharedDist`: run it on that build of the core (a `shared/dist` from
 * before.mjs) through bench/shared-hooks.mjs; the API's own code is the current one, or the entry
 * `apiMain` (another copy of services/api/dist, from before.mjs), and the workers' the current one
 * or `workerMain` (a whole earlier tree's worker: before.mjs `treeAt`).
 */
export async function deploy(
  mode,
  workers,
  redisUrl,
  extraEnv = {},
  { queue = workers > 0, sharedDist = null, apiMain = API_MAIN, workerMain = WORKER_MAIN } = {},
) {
  const port = await freePort();
  // BENCH_UPLOAD_ROOT: the deployments' UPLOAD_DIR somewhere else than .bench, to see what the
  // storage's file system costs (notes.md, #35: this VM's journal-less ext4 against a journaled one).
  const uploadDir = path.join(process.env.BENCH_UPLOAD_ROOT || DATA, `uploads-${mode}`);
  rmSync(uploadDir, { recursive: true, force: true });
  mkdirSync(uploadDir, { recursive: true });
  const prefix = `{censo-bench-${process.pid}-${mode}}`;
  const env = {
    API_KEY,
    HOST: '127.0.0.1',
    PORT: String(port),
    UPLOAD_DIR: uploadDir,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    REDIS_URL: '',
    DATABASE_URL: '',
    ...extraEnv,
    ...(sharedDist ? { BENCH_SHARED_DIST: sharedDist } : {}),
  };
  const hooks = sharedDist ? ['--import', pathToFileURL(path.join(ROOT, 'bench/shared-hooks.mjs')).href] : [];
  const procs = [];
  if (!queue) {
    procs.push(startProcess(`api-${mode}`, [...hooks, apiMain], env));
  } else {
    Object.assign(env, { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix });
    procs.push(startProcess(`api-${mode}`, [...hooks, apiMain, '--role=api'], env));
    for (let i = 0; i < workers; i++)
      procs.push(startProcess(`worker-${mode}-${i + 1}`, [...hooks, workerMain], { ...env, PORT: String(await freePort()) }));
  }
  const url = `http://127.0.0.1:${port}`;
  // A deployment that never gets ready is stopped here: its caller has nothing to stop, and a
  // process left running would keep the bench alive after its report (it did, in 3c).
  await waitFor(`${url}/readyz`, { process: procs[0] }).catch(async (err) => {
    await Promise.all(procs.map((p) => p.stop(2_000)));
    throw err;
  });
  return {
    url,
    api: procs[0],
    /** The API first, then the workers. */
    processes: procs,
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
      rmSync(uploadDir, { recursive: true, force: true });
      if (queue) await dropQueueKeys(redisUrl, prefix);
    },
  };
}

/** Removes the bench deployment's BullMQ keys (its prefix is unique to this run). */
async function dropQueueKeys(redisUrl, prefix) {
  const { Redis } = require('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await deleteRedisPrefix(redis, prefix);
  } catch {
    // best effort
  } finally {
    redis.disconnect();
  }
}

export async function redisAvailable(redisUrl) {
  const { Redis } = require('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  try {
    await redis.connect();
    const info = await redis.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

export async function runHttp(data, { quick, redisUrl, log = console.log }) {
  const fixture = path.join(ROOT, 'test/fixtures/basico/retorno.json');
  const small = multipartBody([{ field: 'retorno', filename: 'retorno.json', content: readFileSync(fixture) }]);
  const large = multipartBody([
    { field: 'retorno', filename: 'retorno.xlsx', content: readFileSync(data.p100k.files.xlsx) },
    { field: 'txt', filename: 'censo.txt', content: readFileSync(data.p100k.files.txt) },
  ]);
  const json25 = multipartBody([{ field: 'retorno', filename: 'retorno.json', content: readFileSync(data.j25.files.json) }]);
  const smallSeconds = quick ? 4 : 10;
  const largeAmount = quick ? 4 : 12;
  const modes = [{ mode: 'embedded', workers: 0 }];
  if (redisUrl) modes.push({ mode: 'queue-1w', workers: 1 }, { mode: 'queue-2w', workers: 2 });

  const results = [];
  for (const { mode, workers } of modes) {
    log(`  http ${mode}: starting`);
    const d = await deploy(mode, workers, redisUrl);
    try {
      // Warm-up (not recorded): threads, JIT, Redis connections.
      await cannon({ url: `${d.url}/api/divergencias-rf`, body: small, connections: 10, duration: 2 });
      await cannon({ url: `${d.url}/api/retorno-rf`, body: large, connections: 1, amount: 1, timeout: 120 });
      // autocannon closes its sockets with requests still in flight when a phase ends; let the
      // server finish those (they count against MAX_INFLIGHT_UPLOADS) before the next phase.
      await sleep(1500);
      const base = memoryOf(d.api.pid);
      const c50 = summarize(
        await cannon({ url: `${d.url}/api/divergencias-rf`, body: small, connections: 50, duration: smallSeconds, timeout: 30 }),
      );
      log(`  http ${mode}: small c=50 ${c50.reqPerSec.toFixed(0)} req/s p50 ${c50.p50} ms`);
      await sleep(1500);
      const c1 = summarize(
        await cannon({ url: `${d.url}/api/divergencias-rf`, body: small, connections: 1, duration: quick ? 2 : 5, timeout: 30 }),
      );
      log(`  http ${mode}: small c=1 p50 ${c1.p50} ms`);
      // The largest json return end to end, one request at a time (compared with a bare
      // JSON.parse of the same file in the core section of the same run).
      const jsonMs = [];
      if (workers === 0) {
        for (let i = 0; i < (quick ? 3 : 5); i++) jsonMs.push(await timedPost(`${d.url}/api/divergencias-rf`, json25));
        log(`  http ${mode}: j25 divergencias ${median(jsonMs).toFixed(0)} ms`);
      }
      await sleep(1500);
      const big = summarize(
        await cannon({ url: `${d.url}/api/retorno-rf`, body: large, connections: 2, amount: largeAmount, timeout: 120 }),
      );
      log(`  http ${mode}: large c=2 ${big.reqPerSec.toFixed(2)} req/s p50 ${big.p50} ms`);
      const mem = memoryOf(d.api.pid);
      results.push({
        mode,
        workers,
        small50: c50,
        small1: c1,
        large: big,
        apiRssBaseMB: base.rss,
        apiPeakRssMB: mem.hwm,
        json25Ms: jsonMs.length > 0 ? median(jsonMs) : null,
      });
    } finally {
      await d.stop();
    }
  }
  const embedded = results.find((r) => r.mode === 'embedded');
  for (const r of results) {
    r.overheadP50At50 = r.small50.p50 - embedded.small50.p50;
    r.overheadP50At1 = r.small1.p50 - embedded.small1.p50;
    r.overheadMeanAt1 = r.small1.mean - embedded.small1.mean;
  }
  return { results, smallBytes: small.length, largeBytes: large.length, largeRows: data.p100k.rows, smallSeconds, largeAmount };
}

/** Milliseconds for one POST of a prebuilt multipart body, its answer read to the end (200 only). */
async function timedPost(url, body) {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'x-api-key': API_KEY, 'content-type': MULTIPART_TYPE } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return performance.now() - t0;
}
