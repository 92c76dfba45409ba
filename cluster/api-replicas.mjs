// The API series of the scale profile without its hosts (issue 55): 1, 2 and 3 APIs on this
// machine's loopback behind one Caddy (round robin, as escala's), one Redis, a few workers and a
// `censo lote --servidor` per client, with no network namespace and, unless asked, no CPU quota.
// It answers one question escala cannot on its own: does an API's CPU a file grow with the
// replicas because of what each API does (the design), or because of the hosts they stand on (a
// quota, a veth)? Each count starts fresh processes, warms every API on a batch through the proxy,
// then sends the measured batches; the counts alternate, run after run, so that none gets the
// quieter minutes. A client keeps at most 4 requests in flight on 2 cores (`censo lote -c`), so
// an intake that APIs under a quota bound needs several clients (`--clients`).
//
//   node cluster/api-replicas.mjs [--files 600] [--runs 2] [--counts 1,2,3] [--workers 4] [--clients 1]
//                                 [--api-cores 0.45]   (a quota per API: cgroup v1, as root)
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync, linkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { schoolReturn } from '../bench/cli.mjs';
import { freePort } from '../bench/http.mjs';
import { cpuSecondsOf, median, waitFor } from '../bench/lib.mjs';
import { cgroupsAvailable, createGroup, delta, removeGroup, removeLeftoverGroups } from './cgroup.mjs';
import { ROOT, sleep, until } from './procs.mjs';

const API_KEY = 'api-replicas-key';
const GROUP_PREFIX = 'censo-apirep';
const CLI = path.join(ROOT, 'cli', 'bin', 'censo.js');
const WARMUP_FILES = 100;
const sha256Of = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** `count` hard links to `file` in a fresh folder. */
function linkedFolder(dir, file, count) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < count; i++) linkSync(file, path.join(dir, `escola-${i}.xlsx`));
  return dir;
}

function start(name, command, args, env, logDir) {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = path.join(logDir, `${name}.log`);
  writeFileSync(log, '');
  const append = (chunk) => writeFileSync(log, chunk, { flag: 'a' });
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  return child;
}

async function stop(children) {
  await Promise.all(
    children.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', resolve);
          child.kill('SIGTERM');
          setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
        }),
    ),
  );
}

/** `censo lote --servidor url <folder>` for each folder at once (one client each): their wall time; throws when one fails. */
async function sendBatches(url, folders) {
  const t0 = performance.now();
  await Promise.all(
    folders.map(
      ({ folder, out }) =>
        new Promise((resolve, reject) => {
          const child = spawn(process.execPath, [CLI, 'lote', '--servidor', url, folder, '-o', out], {
            env: { ...process.env, CENSO_API_KEY: API_KEY },
            stdio: ['ignore', 'ignore', 'pipe'],
          });
          let stderr = '';
          child.stderr.on('data', (chunk) => (stderr += chunk));
          const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
          child.on('error', reject);
          child.on('exit', (code) => {
            clearTimeout(timer);
            if (code === 0) resolve();
            else reject(new Error(`censo lote failed (${code}): ${stderr}`));
          });
        }),
    ),
  );
  return (performance.now() - t0) / 1000;
}

async function oneRun({ count, files, clients, workers, apiCores, redisPort, source, work, expected }) {
  const dir = path.join(work, `apis${count}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, 'uploads'), { recursive: true });
  spawnSync('redis-cli', ['-p', String(redisPort), 'flushall']);
  const env = {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    UPLOAD_DIR: path.join(dir, 'uploads'),
    API_KEY,
    QUEUE_PREFIX: '{censo}',
    LOG_LEVEL: 'warn',
  };
  const apiPorts = await Promise.all(Array.from({ length: count }, freePort));
  const proxyPort = await freePort();
  const children = [];
  const groups = [];
  try {
    const apis = apiPorts.map((port, i) =>
      start(
        `api${i + 1}`,
        process.execPath,
        ['services/api/dist/main.js', '--role=api'],
        { ...env, HOST: '127.0.0.1', PORT: String(port) },
        dir,
      ),
    );
    children.push(...apis);
    for (let i = 0; i < workers; i++) {
      const port = await freePort();
      children.push(
        start(
          `worker${i + 1}`,
          process.execPath,
          ['services/worker/dist/main.js'],
          { ...env, HOST: '127.0.0.1', PORT: String(port), WORKER_CONCURRENCY: '1' },
          dir,
        ),
      );
    }
    const caddyfile = path.join(dir, 'Caddyfile');
    writeFileSync(
      caddyfile,
      [
        '{\n\tadmin off\n\tauto_https off\n}',
        `http://127.0.0.1:${proxyPort} {`,
        '\trequest_body {\n\t\tmax_size 110MB\n\t}',
        `\treverse_proxy ${apiPorts.map((port) => `127.0.0.1:${port}`).join(' ')} {`,
        '\t\tlb_policy round_robin\n\t\tflush_interval -1\n\t}',
        '}\n',
      ].join('\n'),
    );
    children.push(
      start('caddy', 'caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'], { XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir }, dir),
    );
    for (const port of [...apiPorts, proxyPort]) await waitFor(`http://127.0.0.1:${port}/readyz`, { timeoutMs: 60_000 });
    const proxy = `http://127.0.0.1:${proxyPort}`;
    await sendBatches(proxy, [
      { folder: linkedFolder(path.join(dir, 'warmup'), source, WARMUP_FILES * count), out: path.join(dir, 'warmup.csv') },
    ]);
    if (apiCores !== null) {
      apis.forEach((api, i) => {
        const group = createGroup(`${GROUP_PREFIX}-${process.pid}-${count}-${i + 1}`);
        group.setQuota(apiCores);
        group.addPid(api.pid);
        groups.push(group);
      });
    }
    await sleep(2_000);
    // Each client its own folder and batch, as the regional offices of one state send theirs.
    const batches = Array.from({ length: clients }, (_, i) => ({
      folder: linkedFolder(path.join(dir, `batch${i + 1}`), source, files / clients),
      out: path.join(dir, `batch${i + 1}.csv`),
    }));
    const before = apis.map((api) => cpuSecondsOf(api.pid) * 1000);
    const stats = groups.map((group) => group.sample());
    const seconds = await sendBatches(proxy, batches);
    const identical = batches.every(({ out }) => sha256Of(out) === expected);
    const apiMs = apis.map((api, i) => cpuSecondsOf(api.pid) * 1000 - before[i]);
    const throttled = groups.map((group, i) => delta(stats[i], group.sample())).map((d) => (d.periods > 0 ? d.throttled / d.periods : 0));
    return {
      count,
      files,
      seconds,
      identical,
      filesPerSec: files / seconds,
      apiMsPerFile: apiMs.reduce((a, b) => a + b, 0) / files,
      shares: apiMs,
      throttled,
    };
  } finally {
    await stop(children);
    for (const group of groups) removeGroup(group.name);
  }
}

/** The options, or the words of what is wrong with them (exit 2, nothing started). */
function optionsOf(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        files: { type: 'string', default: '600' },
        runs: { type: 'string', default: '2' },
        counts: { type: 'string', default: '1,2,3' },
        workers: { type: 'string', default: '4' },
        clients: { type: 'string', default: '1' },
        'api-cores': { type: 'string' },
      },
    }));
  } catch {
    // Node's own words for a bad option change between versions.
    return { error: 'api-replicas: the options are --files, --runs, --counts, --workers, --clients and --api-cores, each with a value' };
  }
  const whole = (text, min, max) => (/^\d+$/.test(text) && Number(text) >= min && Number(text) <= max ? Number(text) : null);
  const files = whole(values.files, 10, 20_000);
  const runs = whole(values.runs, 1, 10);
  const workers = whole(values.workers, 1, 16);
  const clients = whole(values.clients, 1, 8);
  const counts = values.counts.split(',').map((count) => whole(count, 1, 8));
  const apiCores = values['api-cores'] === undefined ? null : Number(values['api-cores']);
  if (files === null) return { error: 'api-replicas: --files must be 10 to 20000' };
  if (runs === null) return { error: 'api-replicas: --runs must be 1 to 10' };
  if (workers === null) return { error: 'api-replicas: --workers must be 1 to 16' };
  if (clients === null || files % clients !== 0) return { error: 'api-replicas: --clients must be 1 to 8, and divide --files' };
  if (counts.includes(null)) return { error: 'api-replicas: --counts must be a list of 1 to 8' };
  if (apiCores !== null && !(apiCores >= 0.01 && apiCores <= 1)) return { error: 'api-replicas: --api-cores must be 0.01 to 1' };
  if (apiCores !== null && !cgroupsAvailable())
    return { error: 'api-replicas: --api-cores needs the cgroup v1 cpu and cpuacct hierarchies (as root)' };
  return { files, runs, workers, clients, counts, apiCores };
}

async function main() {
  const options = optionsOf(process.argv.slice(2));
  if ('error' in options) {
    console.error(options.error);
    process.exit(2);
  }
  const { files, runs, workers, clients, counts, apiCores } = options;
  if (apiCores !== null) removeLeftoverGroups(GROUP_PREFIX);
  const { file: source } = await schoolReturn();
  const work = path.join(os.tmpdir(), `censo-api-replicas-${process.pid}`);
  // What every measured batch must answer: the local `censo lote` of the same folder, byte for byte.
  const localOut = path.join(work, 'local.csv');
  const local = spawnSync(
    process.execPath,
    [CLI, 'lote', linkedFolder(path.join(work, 'local'), source, files / clients), '-o', localOut],
    {
      encoding: 'utf8',
      timeout: 600_000,
    },
  );
  if (local.status !== 0) throw new Error(`the local censo lote failed (${local.status}): ${local.stderr}`);
  const expected = sha256Of(localOut);
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const results = [];
  try {
    const up = await until(
      async () => spawnSync('redis-cli', ['-p', String(redisPort), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG',
      {
        timeoutMs: 10_000,
      },
    );
    if (!up) throw new Error(`redis-server on ${redisPort} did not answer in 10 s`);
    for (let run = 1; run <= runs; run++) {
      for (const count of counts) {
        const result = await oneRun({ count, files, clients, workers, apiCores, redisPort, source, work, expected });
        results.push({ run, ...result });
        console.error(
          `run ${run}, ${count} API(s): ${result.filesPerSec.toFixed(1)} files/s, API CPU ${result.apiMsPerFile.toFixed(2)} ms a file` +
            (apiCores === null ? '' : `, throttled ${result.throttled.map((t) => `${Math.round(t * 100)} %`).join(' / ')}`),
        );
      }
    }
  } finally {
    redis.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
  if (results.some((r) => !r.identical)) process.exitCode = 1;
  const size = apiCores === null ? 'no quota' : `${apiCores} core each`;
  console.log(`| APIs (${size}) | files/s, runs | API CPU ms a file, runs | median | vs ${counts[0]} API(s) | combined CSV |`);
  console.log('|---:|---|---|---:|---:|---|');
  const one = median(results.filter((r) => r.count === counts[0]).map((r) => r.apiMsPerFile));
  for (const count of counts) {
    const mine = results.filter((r) => r.count === count);
    const cpu = median(mine.map((r) => r.apiMsPerFile));
    console.log(
      `| ${count} | ${mine.map((r) => r.filesPerSec.toFixed(1)).join(', ')} | ${mine.map((r) => r.apiMsPerFile.toFixed(2)).join(', ')} | ${cpu.toFixed(2)} | ${(cpu / one).toFixed(2)}× | ${mine.every((r) => r.identical) ? "the local run's" : '**different (a defect)**'} |`,
    );
  }
}

await main();
