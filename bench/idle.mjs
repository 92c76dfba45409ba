// Section 9: what a deployment spends while nothing happens (issue 47: "nothing spends CPU while
// waiting"). A Redis server of its own (so nobody else's commands are counted), then three idle
// pictures, each measured over the same window after a warm-up:
// - queue mode: one API (`--role=api`) and one worker, no request at all;
// - embedded mode: the single process with its job threads;
// - a CLI waiting on a batch: `censo lote --servidor` has sent its files to an API with no worker,
//   so the batch never ends and the CLI only waits (and the API answers its looks).
// Each process's CPU from /proc, Redis's from INFO cpu, Redis's commands from INFO commandstats:
// a process that polls shows up as CPU and as commands per second.
//   node bench/idle.mjs [--seconds N]     (after `npm run build`; N defaults to 60)
import { spawn } from 'node:child_process';
import { linkSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { schoolReturn } from './cli.mjs';
import { API_KEY, deploy, freePort } from './http.mjs';
import { DATA, ROOT, cpuSecondsOf, sleep } from './lib.mjs';

const CLI = path.join(ROOT, 'cli', 'dist', 'main.js');
/** Long enough for start-up work (connections, first housekeeping passes) to be over. */
const WARM_UP_MS = 30_000;
/** Files the waiting CLI sends: a few requests, then nothing but waiting. */
const CLI_FILES = 20;

async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  // Connection attempts before the server listens are expected; connect() below retries them.
  redis.on('error', () => {});
  for (let i = 0; i < 50; i++) {
    try {
      await redis.connect();
      break;
    } catch {
      await sleep(100);
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid,
    redis,
    async stop() {
      redis.disconnect();
      child.kill('SIGKILL');
    },
  };
}

async function redisSnapshot(redis) {
  const cpu = await redis.info('cpu');
  const read = (key) => Number(new RegExp(`${key}:([\\d.]+)`).exec(cpu)?.[1]);
  const calls = {};
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) calls[m[1]] = Number(m[2]);
  }
  return { cpu: read('used_cpu_sys') + read('used_cpu_user'), calls };
}

/** CPU of each process (percent of one core) and Redis's commands per second over `seconds`. */
async function window(processes, redis, seconds) {
  const before = processes.map((p) => cpuSecondsOf(p.pid));
  const r0 = await redisSnapshot(redis);
  await sleep(seconds * 1000);
  const after = processes.map((p) => cpuSecondsOf(p.pid));
  const r1 = await redisSnapshot(redis);
  // INFO itself is two calls at each end.
  const commands = Object.entries(r1.calls)
    .map(([name, n]) => [name, n - (r0.calls[name] ?? 0) - (name === 'info' ? 2 : 0)])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  return {
    processes: processes.map((p, i) => ({ name: p.name, cpuPercent: ((after[i] - before[i]) / seconds) * 100 })),
    redisCpuPercent: ((r1.cpu - r0.cpu) / seconds) * 100,
    redisCallsPerSecond: commands.reduce((sum, [, n]) => sum + n, 0) / seconds,
    topCommands: commands.slice(0, 6).map(([name, n]) => ({ name, perSecond: n / seconds })),
  };
}

function cliWaiting(url, folder, out) {
  const child = spawn(process.execPath, [CLI, 'lote', folder, '--servidor', url, '-o', out, '--novo-lote', '--quiet'], {
    cwd: ROOT,
    env: { ...process.env, CENSO_API_KEY: API_KEY },
    stdio: 'ignore',
  });
  return { name: 'CLI waiting on a batch', pid: child.pid, child };
}

export async function runIdle({ seconds = 60, log = console.log } = {}) {
  mkdirSync(path.join(DATA, 'logs'), { recursive: true });
  const redisServer = await startRedis();
  const results = {};
  try {
    log(`  queue mode: API + worker, ${seconds} s`);
    const queue = await deploy('idle-queue', 1, redisServer.url);
    try {
      await sleep(WARM_UP_MS);
      const [api, worker] = queue.processes;
      results.queue = await window(
        [
          { name: 'API', pid: api.pid },
          { name: 'worker', pid: worker.pid },
        ],
        redisServer.redis,
        seconds,
      );
    } finally {
      await queue.stop();
    }

    log(`  embedded mode, ${seconds} s`);
    const embedded = await deploy('idle-embedded', 0, redisServer.url);
    try {
      await sleep(WARM_UP_MS);
      results.embedded = await window([{ name: 'embedded', pid: embedded.api.pid }], redisServer.redis, seconds);
    } finally {
      await embedded.stop();
    }

    log(`  a CLI waiting on a batch (API with no worker), ${seconds} s`);
    const folder = path.join(DATA, 'idle-cli');
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const { file } = await schoolReturn();
    for (let i = 0; i < CLI_FILES; i++) linkSync(file, path.join(folder, `escola-${i}.xlsx`));
    const noWorker = await deploy('idle-cli', 0, redisServer.url, {}, { queue: true });
    const cli = cliWaiting(noWorker.url, folder, path.join(DATA, 'idle-cli-out.csv'));
    try {
      await sleep(WARM_UP_MS);
      results.cli = await window([cli, { name: 'API (answering the looks)', pid: noWorker.api.pid }], redisServer.redis, seconds);
    } finally {
      cli.child.kill('SIGKILL');
      await noWorker.stop();
      rmSync(folder, { recursive: true, force: true });
    }
  } finally {
    await redisServer.stop();
  }
  return { seconds, ...results };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' } } });
  const r = await runIdle({ seconds: Number(values.seconds) });
  console.log(JSON.stringify(r, null, 2));
}
