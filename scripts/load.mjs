#!/usr/bin/env node
// Sustained mixed load (npm run load): builds, starts the service as child processes on loopback
// (embedded, then queue mode: API --role=api + 2 workers on a unique QUEUE_PREFIX), drives
// autocannon with small and large uploads on both routes plus queries for a bounded time, and
// checks: 0 unexpected responses, 0 files left in UPLOAD_DIR, RSS of every process and Redis
// memory at start vs end. Prints a table and rewrites the Load section of BENCHMARKS.md
// (between <!-- load:start --> and <!-- load:end -->, which the bench writer preserves).
//   node scripts/load.mjs [--duration 90] [--connections 8] [--modes embedded,queue] [--no-write]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { deleteRedisPrefix } from '../bench/lib.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const require = createRequire(path.join(ROOT, 'test/package.json'));
const autocannon = require('autocannon');
const pg = require('pg');
const { Redis } = require('ioredis');

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
};
const DURATION = Math.max(5, Math.min(1800, Number(flag('duration', '90'))));
const CONNECTIONS = Math.max(1, Math.min(64, Number(flag('connections', '8'))));
const MODES = flag('modes', 'embedded,queue').split(',');
const WRITE = !args.includes('--no-write');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const API_KEY = `load-${randomBytes(8).toString('hex')}`;
const BOUNDARY = '----censoloadboundary9f3c';
const FIX = path.join(ROOT, 'test/fixtures/basico');

// ---------------------------------------------------------------------------------------------
// Request mix

function multipart(files) {
  const parts = [];
  for (const { field, filename, content } of files) {
    parts.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      content,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(parts);
}

function largeReturn(rows) {
  const out = [];
  for (let i = 0; i < rows; i++) {
    out.push({
      Registro: '30',
      Linha: String(i + 2),
      'Código na Escola': `ALU${i}`,
      Campo: i % 2 ? 'Número do CPF' : 'Nome',
      Mensagem: 'O campo não está de acordo com a base da Receita Federal.',
      Conteúdo: `${10000000000 + i} -- ${20000000000 + i}`,
    });
  }
  return Buffer.from(JSON.stringify(out));
}

function mix() {
  const json = readFileSync(path.join(FIX, 'retorno.json'));
  const xlsx = readFileSync(path.join(FIX, 'retorno.xlsx'));
  const txt = readFileSync(path.join(FIX, 'censo.txt'));
  const large = largeReturn(40_000); // ~8 MB
  const upload = (route, files) => ({
    method: 'POST',
    path: route,
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'x-api-key': API_KEY },
    body: multipart(files),
  });
  const get = (p) => ({ method: 'GET', path: p, headers: { 'x-api-key': API_KEY } });
  const small = [
    upload('/api/divergencias-rf', [{ field: 'retorno', filename: 'retorno.json', content: json }]),
    upload('/api/retorno-rf', [
      { field: 'retorno', filename: 'retorno.json', content: json },
      { field: 'txt', filename: 'censo.txt', content: txt },
    ]),
    get('/api/query?query=audits&limit=100'),
    upload('/api/divergencias-rf', [{ field: 'retorno', filename: 'retorno.xlsx', content: xlsx }]),
    upload('/api/retorno-rf', [
      { field: 'retorno', filename: 'retorno.xlsx', content: xlsx },
      { field: 'txt', filename: 'censo.txt', content: txt },
    ]),
    get('/api/query?query=audits&user_id=3&inicio=2025-01-01&fim=2025-12-31'),
    get('/api/query?query=audits&format=csv'),
  ];
  // One large upload per 3 rounds of the small ones, per connection.
  return {
    requests: [
      ...small,
      ...small,
      ...small,
      upload('/api/divergencias-rf', [{ field: 'retorno', filename: 'retorno.json', content: large }]),
    ],
    largeBytes: large.length,
  };
}

// ---------------------------------------------------------------------------------------------
// Processes and sampling

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

function start(name, script, env, extraArgs = []) {
  const child = spawn(process.execPath, [script, ...extraArgs], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = [];
  const keep = (d) => {
    log.push(d.toString());
    if (log.length > 200) log.shift();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  return { name, child, log };
}

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function waitReady(url, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`${url} not ready`);
}

async function stop(proc) {
  if (proc.child.exitCode !== null) return proc.child.exitCode;
  proc.child.kill('SIGTERM');
  const code = await Promise.race([new Promise((r) => proc.child.once('exit', (c) => r(c))), sleep(40_000).then(() => 'timeout')]);
  if (code === 'timeout') proc.child.kill('SIGKILL');
  return code;
}

async function redisMemory(redis) {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)[1]) / 1024 / 1024;
}

function runCannon(url, requests, duration) {
  return new Promise((resolve, reject) => {
    const instance = autocannon({ url, connections: CONNECTIONS, duration, requests, timeout: 60 }, (err, r) =>
      err ? reject(err) : resolve(r),
    );
    instance.on('error', () => {});
  });
}

// ---------------------------------------------------------------------------------------------

async function prepareDatabase() {
  const schema = `load_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(
    `CREATE TABLE ${schema}.audits (id bigserial PRIMARY KEY, auditable_id bigint, auditable_type varchar, user_id bigint, user_type varchar, action varchar, created_at timestamp(6))`,
  );
  await client.query(
    `INSERT INTO ${schema}.audits (auditable_id, user_id, action, created_at) SELECT g, g % 10, CASE WHEN g % 3 = 0 THEN 'update' ELSE 'create' END, timestamp '2025-01-01' + g * interval '37 minutes' FROM generate_series(1, 5000) g`,
  );
  await client.query(`CREATE INDEX ON ${schema}.audits (user_id, id)`);
  const url = new URL(DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.href,
    drop: async () => {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Misbehaving clients beside the good ones: trickles that would hold upload slots forever, and a
// flood of uploads with a wrong key sent whole before reading (the answer must still arrive).

const TRICKLES = 3;
const UPLOAD_TIMEOUT_MS = 8000;

function trickle(url, until) {
  return new Promise((resolve) => {
    const { port } = new URL(url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let answer = '';
    // Valid chunked framing, one byte of the file per chunk: only the pace is wrong.
    const chunk = (text) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    const timer = setInterval(() => socket.writable && socket.write(chunk('x')), 1000);
    socket.on('connect', () =>
      socket.write(
        `POST /api/divergencias-rf HTTP/1.1\r\nhost: x\r\nx-api-key: ${API_KEY}\r\ncontent-type: multipart/form-data; boundary=${BOUNDARY}\r\ntransfer-encoding: chunked\r\n\r\n` +
          chunk(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="retorno"; filename="retorno.json"\r\n\r\n`),
      ),
    );
    socket.on('data', (d) => (answer += d));
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      clearInterval(timer);
      socket.destroy();
      resolve(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 'none');
    };
    socket.on('close', done);
    socket.on('error', done);
    setTimeout(done, Math.max(0, until - Date.now()) + UPLOAD_TIMEOUT_MS + 5000).unref();
  });
}

async function misbehave(url, seconds) {
  const until = Date.now() + seconds * 1000;
  const stats = { trickles: 0, trickles408: 0, flood: 0, flood401: 0, floodErrors: 0 };
  const trickler = async () => {
    while (Date.now() < until) {
      const status = await trickle(url, until);
      stats.trickles++;
      if (status === '408') stats.trickles408++;
    }
  };
  const body = multipart([{ field: 'retorno', filename: 'retorno.json', content: Buffer.alloc(1024 * 1024, 0x61) }]);
  const flooder = async () => {
    while (Date.now() < until) {
      stats.flood++;
      try {
        const response = await fetch(`${url}/api/divergencias-rf`, {
          method: 'POST',
          headers: { 'x-api-key': 'wrong', 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
          body,
        });
        await response.arrayBuffer();
        if (response.status === 401) stats.flood401++;
      } catch {
        stats.floodErrors++;
      }
    }
  };
  await Promise.all([...Array.from({ length: TRICKLES }, trickler), flooder()]);
  return stats;
}

async function runMode(mode, requests, db) {
  const uploadDir = mkdtempSync(path.join(os.tmpdir(), `censo-load-${mode}-`));
  const port = await freePort();
  const prefix = `{load-${randomUUID()}}`;
  const base = {
    API_KEY,
    HOST: '127.0.0.1',
    PORT: String(port),
    UPLOAD_DIR: uploadDir,
    LOG_LEVEL: 'warn',
    DATABASE_URL: db.url,
    WORKER_CONCURRENCY: '2',
    JOB_TIMEOUT_MS: '60000',
    UPLOAD_TIMEOUT_MS: String(UPLOAD_TIMEOUT_MS),
  };
  const procs = [];
  let redis = null;
  if (mode === 'embedded') {
    procs.push(start('api (embedded)', 'services/api/dist/main.js', base));
  } else {
    const q = { ...base, REDIS_URL, QUEUE_PREFIX: prefix };
    procs.push(start('api (--role=api)', 'services/api/dist/main.js', q, ['--role=api']));
    for (const i of [1, 2])
      procs.push(start(`worker ${i}`, 'services/worker/dist/main.js', { ...q, PORT: String(await freePort()), WORKER_CONCURRENCY: '1' }));
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  }
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(url);
    // Warm-up: JIT, pools and connections, so "start" is a steady-state sample.
    await runCannon(url, requests, 5);
    const start0 = { rss: procs.map((p) => rssMb(p.child.pid)), redis: redis ? await redisMemory(redis) : null };
    const samples = [];
    const sampler = setInterval(() => samples.push(procs.map((p) => rssMb(p.child.pid))), 5000);
    console.error(`load: ${mode} for ${DURATION}s, ${CONNECTIONS} connections`);
    const [r, bad] = await Promise.all([runCannon(url, requests, DURATION), misbehave(url, DURATION)]);
    clearInterval(sampler);
    const end = { rss: procs.map((p) => rssMb(p.child.pid)), redis: redis ? await redisMemory(redis) : null };
    await sleep(2000);
    const left = readdirSync(uploadDir);
    const peak = procs.map((_, i) => Math.max(start0.rss[i], end.rss[i], ...samples.map((s) => s[i])));
    return {
      mode,
      requests: r['2xx'] + r.non2xx,
      ok: r['2xx'],
      unexpected: r.non2xx + r.errors + r.timeouts,
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: r.timeouts,
      reqPerSec: (r['2xx'] + r.non2xx) / r.duration,
      p50: r.latency.p50,
      p99: r.latency.p99,
      max: r.latency.max,
      filesLeft: left.length,
      bad,
      // RSS at each quarter of the run: a leak keeps climbing, warm-up levels off.
      processes: procs.map((p, i) => ({
        name: p.name,
        start: start0.rss[i],
        quarters: [1, 2, 3].map((q) => samples[Math.min(samples.length - 1, Math.floor((samples.length * q) / 4))]?.[i]),
        end: end.rss[i],
        peak: peak[i],
      })),
      redis: redis ? { start: start0.redis, end: end.redis } : null,
    };
  } finally {
    for (const p of procs.reverse()) await stop(p);
    if (redis) {
      await deleteRedisPrefix(redis, prefix);
      redis.disconnect();
    }
    rmSync(uploadDir, { recursive: true, force: true });
  }
}

const mb = (n) => (Number.isFinite(n) ? n.toFixed(1) : '?');

function table(results, largeBytes) {
  const lines = [];
  lines.push(
    `Mixed load on loopback, ${DURATION} s per mode, ${CONNECTIONS} connections (autocannon), ${os.cpus().length} cores, Node ${process.version}.`,
  );
  lines.push(
    `Each connection loops over: divergencias-rf (json, xlsx), retorno-rf (json+txt, xlsx+txt), GET /api/query (page, filtered, CSV of 5000 rows) three times, then one ${(largeBytes / 1024 / 1024).toFixed(1)} MB return (40 000 rows) on divergencias-rf.`,
  );
  lines.push('');
  lines.push('| mode | requests | req/s | 2xx | unexpected (non-2xx / errors / timeouts) | p50 ms | p99 ms | max ms | files left |');
  lines.push('|---|---:|---:|---:|---|---:|---:|---:|---:|');
  for (const r of results)
    lines.push(
      `| ${r.mode} | ${r.requests} | ${r.reqPerSec.toFixed(1)} | ${r.ok} | ${r.unexpected} (${r.non2xx} / ${r.errors} / ${r.timeouts}) | ${r.p50} | ${r.p99} | ${r.max} | ${r.filesLeft} |`,
    );
  lines.push('');
  lines.push(
    `Beside them, misbehaving clients for the whole run: ${TRICKLES} trickles (an upload's headers, then one byte a second; UPLOAD_TIMEOUT_MS=${UPLOAD_TIMEOUT_MS}) reopened as soon as they are cut, and a flood of 1 MB uploads with a wrong key, each written whole before its answer is read.`,
  );
  lines.push('');
  lines.push('| mode | trickles cut with 408 | flood answered 401 | flood errors (resets) |');
  lines.push('|---|---:|---:|---:|');
  for (const r of results)
    lines.push(`| ${r.mode} | ${r.bad.trickles408} of ${r.bad.trickles} | ${r.bad.flood401} of ${r.bad.flood} | ${r.bad.floodErrors} |`);
  lines.push('');
  lines.push('| mode | process | RSS start MB | 25% | 50% | 75% | end | peak |');
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    for (const p of r.processes) {
      lines.push(
        `| ${r.mode} | ${p.name} | ${mb(p.start)} | ${p.quarters.map((q) => mb(q ?? NaN)).join(' | ')} | ${mb(p.end)} | ${mb(p.peak)} |`,
      );
    }
  }
  for (const r of results)
    if (r.redis)
      lines.push(
        '',
        `Redis \`used_memory\` (${r.mode}): ${mb(r.redis.start)} MB at start, ${mb(r.redis.end)} MB at end (completed jobs are kept up to 10 000 / 1 h by design, then trimmed).`,
      );
  lines.push(
    '',
    '"start" is sampled after a 5 s warm-up; "unexpected" is any non-2xx answer, socket error or timeout (the mix contains only valid requests, and rate limiting and load shedding stay below their thresholds).',
  );
  return lines.join('\n');
}

function writeBenchmarks(text) {
  const file = path.join(ROOT, 'BENCHMARKS.md');
  const section = `<!-- load:start -->\n## Load\n\nWritten by \`npm run load\` (scripts/load.mjs) on ${new Date().toISOString().slice(0, 10)}.\n\n${text}\n<!-- load:end -->`;
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const re = /<!-- load:start -->[\s\S]*?<!-- load:end -->/;
  const next = re.test(current) ? current.replace(re, section) : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, next);
}

async function main() {
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
  const { requests, largeBytes } = mix();
  const db = await prepareDatabase();
  const results = [];
  try {
    for (const mode of MODES) results.push(await runMode(mode, requests, db));
  } finally {
    await db.drop();
  }
  const text = table(results, largeBytes);
  console.log(text);
  if (WRITE) writeBenchmarks(text);
  const bad = results.filter(
    (r) =>
      r.unexpected > 0 ||
      r.filesLeft > 0 ||
      r.bad.floodErrors > 0 ||
      r.bad.flood401 !== r.bad.flood ||
      r.bad.trickles408 < r.bad.trickles - TRICKLES,
  );
  if (bad.length) {
    console.error(`load: FAILED in ${bad.map((r) => r.mode).join(', ')}`);
    process.exit(1);
  }
}

// A hard bound whatever happens: duration per mode plus start-up and shutdown.
const hardStop = setTimeout(
  () => {
    console.error('load: hard time limit reached');
    process.exit(2);
  },
  (DURATION + 120) * MODES.length * 1000 + 120_000,
);
hardStop.unref();
await main();
