#!/usr/bin/env node
// The scale profile (issue 47): how a state's batch rate grows with worker hosts, and with API
// hosts, measured. Each "host" is a network namespace (net.mjs, its own set `cnse` on
// 10.231.43.0/24, apart from the fault suite's) whose processes run in a cgroup v1 group of their
// own (cgroup.mjs) under a CPU quota: a worker limited to 10 ms of every 100 ms stands for a host
// of 0.1 core, so that 16 "hosts" fit on a 2-core machine. Redis (a Sentinel trio as topology.mjs
// runs it, or a Redis Cluster), the API, the `censo lote --servidor` client and, for the API
// series, a Caddy in front of the APIs, each has a host and a group too, so every role's CPU is
// read from its group's cpuacct.usage, and every host's throttling from its cpu.stat.
//
//   node cluster/escala.mjs [--profile short|long] [--report FILE] [--out DIR] [--chart FILE]
//                           [--series workers,cluster,api] [--runs N] [--files-per-core N]
//   node cluster/escala.mjs --cleanup     removes what an interrupted run left behind
//   npm run cluster -- escala [same options]   (cluster/run.mjs hands the rest over)
//
// The report is the section of CLUSTER.md between `<!-- escala:inicio -->` and
// `<!-- escala:fim -->` (sections.mjs), with a chart (SVG) beside the report; the run folder keeps
// results.json and every process's log. Exit code 0 when every run finished with every file
// answered and the output byte-identical to the local `censo lote`, 1 otherwise, 2 for usage.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createReadStream, existsSync, linkSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { schoolReturn } from '../bench/cli.mjs';
import { median } from '../bench/lib.mjs';
import { cgroupsAvailable, createGroup, delta, groupsWithPrefix, removeLeftoverGroups } from './cgroup.mjs';
import { renderChart, renderSection } from './escala-report.mjs';
import { network } from './net.mjs';
import { ROOT, killAll, startIn, until } from './procs.mjs';
import { withEscalaSection } from './sections.mjs';
import { REDIS_PORT, SENTINEL_PORT, redisServerArgs, sentinelConfig } from './topology.mjs';
import { fitUsl } from './usl.mjs';

export const PREFIX = 'cnse';
export const SUBNET = '10.231.43';
const API_PORT = 3000;
const WORKER_PORT = 9100;
const PROXY_PORT = 8080;
/** Redis Cluster: two nodes on each Redis host (a master and another master's replica). */
const CLUSTER_PORTS = [7000, 7001];
const API_KEY = 'escala-key';
const CLI = path.join(ROOT, 'cli/dist/main.js');
const MAX_WORKERS = 16;
const MAX_APIS = 3;
const LOCK = path.join(os.tmpdir(), 'censo-escala.lock');

/** The addresses: APIs .11–.13, workers .21–.36, Redis .51–.53, the proxy .61, the client .71. */
export const ESCALA_HOSTS = {
  ...Object.fromEntries(Array.from({ length: MAX_APIS }, (_, i) => [`api${i + 1}`, 11 + i])),
  ...Object.fromEntries(Array.from({ length: MAX_WORKERS }, (_, i) => [`wk${i + 1}`, 21 + i])),
  rd1: 51,
  rd2: 52,
  rd3: 53,
  proxy: 61,
  load: 71,
};
export const net = network({ prefix: PREFIX, subnet: SUBNET, hosts: ESCALA_HOSTS });
const REDIS_HOSTS = ['rd1', 'rd2', 'rd3'];

/**
 * Files per worker host are proportional to its quota (`filesPerCore` × cores), so every size's
 * batch takes about as long at a perfect scale: 70 files for a 0.1-core host in the long profile
 * (1,500 rows each, the trial's 150 halved to keep the whole profile near 10 minutes).
 */
export const PROFILES = {
  // In `npm test` (test/integration/escala.test.ts): two sizes, one run each, a small batch.
  short: {
    workers: { sizes: [size(1, 0.1), size(2, 0.1)], runs: 1 },
    filesPerCore: 250,
    warmupPerHost: 2,
    cluster: null,
    api: null,
    maxMs: 80_000,
  },
  // By hand, on a quiet machine: about 10 minutes.
  long: {
    workers: { sizes: [size(1, 0.1), size(2, 0.1), size(4, 0.1), size(8, 0.1), size(16, 0.05)], runs: 3 },
    filesPerCore: 700,
    warmupPerHost: 3,
    cluster: { sizes: [size(1, 0.1), size(4, 0.1)], runs: 1 },
    // The API costs some 3 ms of CPU a file to take the uploads in, 4–9 ms in all (the tasks'
    // records, its own polling of Redis, the combined CSV): one at 0.05 core takes some 17 files/s
    // in. 480 files are 10 requests of 50 (the client's group), 4 at a time (the most `censo`
    // takes on 2 cores), dealt round robin: 5 + 5 on two APIs, 4 + 3 + 3 on three. Four workers
    // of 0.25 core (some 50 files/s) do not limit.
    api: { counts: [1, 2, 3], apiCores: 0.05, workers: size(4, 0.25), files: 480, runs: 2, concurrency: 4 },
    maxMs: 12 * 60_000,
  },
};
function size(hosts, cores) {
  return { hosts, cores };
}

const log = (msg) => console.log(`[escala ${new Date().toISOString().slice(11, 19)}] ${msg}`);
const run = promisify(execFile);

class Usage extends Error {}

/** SHA-256 of a file, streamed. */
async function sha256Of(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/** A short-lived Redis client from the orchestrator (root namespace, through the bridge). */
async function ask(host, port, fn) {
  const redis = new Redis({
    host,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** `INFO commandstats` as { command: calls }. */
async function commandCalls(address) {
  const [host, port] = address.split(':');
  const info = await ask(host, Number(port), (redis) => redis.info('commandstats'));
  const calls = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]] = Number(m[2]);
  return calls;
}

/** The calls of several nodes, added. */
async function commandCallsOf(addresses) {
  const total = {};
  for (const address of addresses) {
    for (const [command, calls] of Object.entries(await commandCalls(address))) total[command] = (total[command] ?? 0) + calls;
  }
  return total;
}

/** The machine's busy CPU time so far, in ms (every process's, ours and other people's): /proc/stat. */
function machineBusyMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user).
  const [user, nice, system, , , irq, softirq, steal] = fields;
  const ticks = user + nice + system + irq + softirq + (steal ?? 0);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/** A `censo lote` folder of `count` hard links to one school return, in regional subfolders. */
function linkedFolder(dataDir, source, count) {
  const dir = path.join(dataDir, `lote-${count}`);
  if (existsSync(dir)) return dir;
  for (let i = 0; i < count; i++) {
    const folder = path.join(dir, `regional-${i % Math.min(50, count)}`);
    mkdirSync(folder, { recursive: true });
    linkSync(source, path.join(folder, `escola-${i}.xlsx`));
  }
  return dir;
}

/** Runs `node cli/dist/main.js args` in the root namespace (no group): the local reference. */
async function localLote(folder, out) {
  const started = Date.now();
  await run(process.execPath, [CLI, '--quiet', 'lote', folder, '-o', out], { cwd: ROOT, timeout: 600_000, maxBuffer: 1 << 20 });
  return { ms: Date.now() - started, sha256: await sha256Of(out) };
}

/** The run's state: the hosts' groups, the processes, the Redis in use. */
class Bench {
  constructor({ runDir, profile, profileName }) {
    this.runDir = runDir;
    this.profile = profile;
    this.profileName = profileName;
    this.logs = path.join(runDir, 'logs');
    this.uploads = path.join(runDir, 'uploads');
    this.groups = {};
    this.procs = {};
    this.redis = null;
    this.started = Date.now();
    this.deadline = this.started + profile.maxMs;
    mkdirSync(this.logs, { recursive: true });
    mkdirSync(this.uploads, { recursive: true });
  }

  group(host) {
    this.groups[host] ??= createGroup(`${PREFIX}-${host}`);
    return this.groups[host];
  }

  /** Starts a process on `host`, in the host's group. */
  start(host, name, command, args, env) {
    const proc = startIn(host, name, command, args, env, path.join(this.logs, `${name}.log`), {
      ns: net.nsOf(host),
      cgroupProcs: this.group(host).procsFiles,
    });
    this.procs[name] = proc;
    return proc;
  }

  async stop(name) {
    await this.procs[name]?.stop(10_000);
    delete this.procs[name];
  }

  async stopAll(filter = () => true) {
    await Promise.all(
      Object.keys(this.procs)
        .filter(filter)
        .map((name) => this.stop(name)),
    );
  }

  serviceEnv() {
    return {
      API_KEY,
      QUEUE_PREFIX: '{censo}',
      ...this.redis.env,
      // One folder for every host (the machine's disk, as an NFS share would be): the files of a
      // task go from the API to a worker by path, as they do in any single-folder deployment.
      UPLOAD_DIR: this.uploads,
      // A host of a fraction of a core runs one job at a time.
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'info',
    };
  }

  // --- Redis ---------------------------------------------------------------------------------

  /** A master on rd1, replicas on rd2 and rd3, a sentinel beside each (as topology.mjs). */
  async startSentinel() {
    for (const host of REDIS_HOSTS) {
      const dir = path.join(this.runDir, 'redis', host);
      mkdirSync(dir, { recursive: true });
      const replicaOf = host === 'rd1' ? null : net.ipOf('rd1');
      this.start(host, `redis-${host}`, 'redis-server', redisServerArgs({ bind: net.ipOf(host), port: REDIS_PORT, dir, replicaOf }), {});
      const conf = path.join(dir, 'sentinel.conf');
      writeFileSync(conf, sentinelConfig({ bind: net.ipOf(host), dir, master: net.ipOf('rd1') }));
      this.start(host, `sentinel-${host}`, 'redis-server', [conf, '--sentinel'], {});
    }
    const ready = await until(
      async () => {
        for (const host of REDIS_HOSTS) {
          const known = await ask(net.ipOf(host), SENTINEL_PORT, async (redis) => ({
            replicas: (await redis.call('SENTINEL', 'REPLICAS', 'censo')).length,
            sentinels: (await redis.call('SENTINEL', 'SENTINELS', 'censo')).length,
          }));
          if (known.replicas < 2 || known.sentinels < 2) return false;
        }
        return true;
      },
      { timeoutMs: 60_000, everyMs: 300 },
    );
    if (!ready) throw new Error('the sentinels did not find the replicas and each other within 60 s');
    this.redis = {
      kind: 'sentinel',
      label: 'Sentinel trio (master + 2 replicas, AOF everysec)',
      env: { REDIS_SENTINELS: REDIS_HOSTS.map((h) => `${net.ipOf(h)}:${SENTINEL_PORT}`).join(','), REDIS_SENTINEL_NAME: 'censo' },
      // No failover happens in this profile: the master stays on rd1.
      masters: async () => [`${net.ipOf('rd1')}:${REDIS_PORT}`],
    };
  }

  /** Three masters, each with a replica on another host (redis-cli --cluster create). */
  async startCluster() {
    const nodes = [];
    for (const port of CLUSTER_PORTS) {
      for (const host of REDIS_HOSTS) {
        const dir = path.join(this.runDir, 'redis-cluster', `${host}-${port}`);
        mkdirSync(dir, { recursive: true });
        const args = [
          ...redisServerArgs({ bind: net.ipOf(host), port, dir }),
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          path.join(dir, 'nodes.conf'),
          '--cluster-node-timeout',
          '2000',
        ];
        this.start(host, `redis-${host}-${port}`, 'redis-server', args, {});
        nodes.push(`${net.ipOf(host)}:${port}`);
      }
    }
    const answers = (address) => ask(address.split(':')[0], Number(address.split(':')[1]), (redis) => redis.ping()).then(() => true);
    if (
      !(await until(async () => (await Promise.all(nodes.map((n) => answers(n).catch(() => false)))).every(Boolean), { timeoutMs: 20_000 }))
    )
      throw new Error('the Redis Cluster nodes did not answer within 20 s');
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes'], { timeout: 30_000 });
    const roleOf = (address) =>
      ask(address.split(':')[0], Number(address.split(':')[1]), async (redis) => ({
        ok: String(await redis.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
        replication: await redis.info('replication'),
      }));
    const settled = await until(
      async () => {
        for (const node of nodes) {
          const { ok, replication } = await roleOf(node);
          if (!ok || (replication.includes('role:slave') && !replication.includes('master_link_status:up'))) return false;
        }
        return true;
      },
      { timeoutMs: 30_000, everyMs: 300 },
    );
    if (!settled) throw new Error('the Redis Cluster was not ok with its replicas in sync within 30 s');
    this.redis = {
      kind: 'cluster',
      label: 'Redis Cluster (3 masters, a replica each, AOF everysec)',
      env: { REDIS_CLUSTER_NODES: nodes.join(',') },
      masters: async () => {
        const masters = [];
        for (const node of nodes) if ((await roleOf(node)).replication.includes('role:master')) masters.push(node);
        return masters;
      },
    };
  }

  async stopRedis() {
    await this.stopAll((name) => name.startsWith('redis-') || name.startsWith('sentinel-'));
    this.redis = null;
  }

  // --- Services ------------------------------------------------------------------------------

  /** Until `url` answers 200 (at most 90 s); a process that exits meanwhile fails it at once. */
  async waitReady(url, what, proc = this.procs[what]) {
    let died = false;
    const ok = await until(
      async () => {
        died = Boolean(proc && !proc.running);
        return died || (await fetch(url, { signal: AbortSignal.timeout(3_000) })).status === 200;
      },
      {
        timeoutMs: 90_000,
        everyMs: 300,
      },
    );
    if (died) throw new Error(`${what} exited (${await proc.exited}) before it was ready; see ${proc.logFile}`);
    if (!ok) throw new Error(`${what} not ready within 90 s (${url})`);
  }

  /** An API on `host`, unlimited (the API series sets its quota once it is warm). */
  async startApi(host) {
    this.group(host).setQuota(null);
    this.start(host, host, process.execPath, [path.join(ROOT, 'services/api/dist/main.js'), '--role=api'], {
      ...this.serviceEnv(),
      HOST: net.ipOf(host),
      PORT: String(API_PORT),
    });
    await this.waitReady(`http://${net.ipOf(host)}:${API_PORT}/readyz`, host);
  }

  /** Workers wk1..wk`count` running (the ones missing are started, unlimited until ready). */
  async ensureWorkers(count) {
    const missing = [];
    for (let i = 1; i <= count; i++) if (!this.procs[`wk${i}`]?.running) missing.push(`wk${i}`);
    for (const host of missing) {
      // Started without a quota: 16 node processes loading their modules at 0.05 core each would
      // take a minute to be ready. The quota is set before anything is measured.
      this.group(host).setQuota(null);
      this.start(host, host, process.execPath, [path.join(ROOT, 'services/worker/dist/main.js')], {
        ...this.serviceEnv(),
        HOST: net.ipOf(host),
        PORT: String(WORKER_PORT),
      });
    }
    await Promise.all(missing.map((host) => this.waitReady(`http://${net.ipOf(host)}:${WORKER_PORT}/readyz`, host)));
    return missing;
  }

  /** Caddy in the proxy host, round robin over `apis` (plain HTTP: the hosts' own network). */
  async startProxy(apis) {
    await this.stop('proxy');
    const dir = path.join(this.runDir, 'caddy');
    mkdirSync(dir, { recursive: true });
    const caddyfile = path.join(dir, `Caddyfile-${apis.length}`);
    writeFileSync(
      caddyfile,
      [
        "# The scale profile's entrance (cluster/escala.mjs): every API host behind one proxy, as",
        "# docker/caddy/Caddyfile puts the replicas, in plain HTTP on the profile's own network.",
        '{',
        '\tadmin off',
        '\tauto_https off',
        '\tservers {',
        '\t\ttimeouts {',
        '\t\t\tread_body 130s',
        '\t\t\tread_header 10s',
        '\t\t\twrite 300s',
        '\t\t\tidle 2m',
        '\t\t}',
        '\t}',
        '}',
        '',
        `http://${net.ipOf('proxy')}:${PROXY_PORT} {`,
        '\trequest_body {',
        '\t\tmax_size 110MB',
        '\t}',
        `\treverse_proxy ${apis.map((host) => `${net.ipOf(host)}:${API_PORT}`).join(' ')} {`,
        '\t\tlb_policy round_robin',
        '\t\tflush_interval -1',
        '\t\ttransport http {',
        '\t\t\tdial_timeout 5s',
        '\t\t\tresponse_header_timeout 260s',
        '\t\t}',
        '\t}',
        '}',
        '',
      ].join('\n'),
    );
    // Caddy's own state (certificates, autosave) in the run folder: the packaged service and its
    // /var/lib/caddy are not used.
    this.start('proxy', 'proxy', 'caddy', ['run', '--config', caddyfile, '--adapter', 'caddyfile'], {
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      XDG_DATA_HOME: path.join(dir, 'data'),
    });
    await this.waitReady(`http://${net.ipOf('proxy')}:${PROXY_PORT}/readyz`, 'caddy');
    return `http://${net.ipOf('proxy')}:${PROXY_PORT}`;
  }

  // --- One measured batch --------------------------------------------------------------------

  /**
   * `censo lote <folder> --servidor <url>` from the load host, with every role's group read before
   * and after, and Redis's command counts. `apiDirect`: an API's own address, for the checks after.
   */
  async batch({ label, folder, files, local, url, apiDirect, roles, concurrency, measured = true }) {
    const out = path.join(this.runDir, 'out', `${label}.csv`);
    mkdirSync(path.dirname(out), { recursive: true });
    const hosts = Object.values(roles).flat();
    const masters = measured ? await this.redis.masters() : [];
    const before = Object.fromEntries(hosts.map((h) => [h, this.group(h).sample()]));
    const callsBefore = measured ? await commandCallsOf(masters) : {};
    const busyBefore = machineBusyMs();
    const timeoutMs = Math.min(15 * 60_000, 60_000 + files * 1_000);
    const started = Date.now();
    const cli = this.start(
      'load',
      `cli-${label}`,
      process.execPath,
      [CLI, 'lote', folder, '--servidor', url, '--novo-lote', '-o', out, ...(concurrency ? ['--concurrency', String(concurrency)] : [])],
      { CENSO_API_KEY: API_KEY, HOME: this.runDir },
    );
    const timer = setTimeout(() => cli.signal('SIGKILL'), timeoutMs);
    const exit = await cli.exited;
    clearTimeout(timer);
    const wallMs = Date.now() - started;
    delete this.procs[`cli-${label}`];
    const after = Object.fromEntries(hosts.map((h) => [h, this.group(h).sample()]));
    const busyMs = machineBusyMs() - busyBefore;
    const callsAfter = measured ? await commandCallsOf(masters) : {};

    const cliLog = readFileSync(cli.logFile, 'utf8');
    const lote = /Lote (\S+): criado\./.exec(cliLog)?.[1] ?? null;
    let answered = null;
    if (lote) {
      const res = await fetch(`${apiDirect}/api/lotes/${lote}`, { headers: { 'x-api-key': API_KEY }, signal: AbortSignal.timeout(10_000) });
      const body = res.ok ? await res.json() : null;
      answered = body
        ? { total: body.tarefas.total, concluida: body.tarefas.concluida, falhou: body.tarefas.falhou, estado: body.estado }
        : null;
      // The results go now (not at the end of their retention): the shared folder stays small.
      await fetch(`${apiDirect}/api/lotes/${lote}`, {
        method: 'DELETE',
        headers: { 'x-api-key': API_KEY },
        signal: AbortSignal.timeout(60_000),
      })
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
    }
    const sameOutput = existsSync(out) && local ? (await sha256Of(out)) === local.sha256 : false;
    rmSync(out, { force: true });

    const result = {
      label,
      files,
      exit,
      wallMs,
      filesPerSec: files / (wallMs / 1000),
      lote,
      answered,
      everyFileAnswered: exit === 0 && answered?.concluida === files && answered?.total === files,
      sameOutput,
      startedAt: started,
      // What the client said when it did not end well (its own lines name the files that failed).
      ...(exit === 0 ? {} : { clientSaid: cliLog.trim().split('\n').slice(-5).join('\n') }),
    };
    if (!measured) return result;

    // CPU per role, and each host's throttling.
    result.hosts = Object.fromEntries(hosts.map((h) => [h, { ...delta(before[h], after[h]), quota: this.group(h).quota }]));
    result.cpuMsPerFile = Object.fromEntries(
      Object.entries(roles).map(([role, list]) => [role, list.reduce((sum, h) => sum + result.hosts[h].cpuMs, 0) / files]),
    );
    // Redis: calls (a Lua script's own commands count as well as its EVALSHA).
    const diff = Object.entries(callsAfter)
      .map(([command, calls]) => [command, calls - (callsBefore[command] ?? 0)])
      .filter(([command, calls]) => calls > 0 && command !== 'info')
      .sort((a, b) => b[1] - a[1]);
    result.redis = {
      nodes: masters.length,
      callsPerFile: diff.reduce((sum, [, calls]) => sum + calls, 0) / files,
      top: diff.slice(0, 5).map(([command, calls]) => ({ command, perFile: calls / files })),
    };
    // Cores: what the quotas promise plus what the unlimited processes used, against the machine's.
    let quotaCores = 0;
    let unlimitedCores = 0;
    let usedCores = 0;
    for (const d of Object.values(result.hosts)) {
      const used = d.cpuMs / wallMs;
      usedCores += used;
      if (d.quota === null) unlimitedCores += used;
      else quotaCores += d.quota;
    }
    const cores = os.availableParallelism();
    // What the rest of the machine used meanwhile (other people's processes on a shared machine, and
    // this profile's orchestrator): the hosts had that much less than the cores to share.
    const othersCores = Math.max(0, busyMs / wallMs - usedCores);
    result.cores = { machine: cores, quotas: quotaCores, unlimited: unlimitedCores, used: usedCores, others: othersCores };
    result.oversubscribed = quotaCores + unlimitedCores > cores;
    return result;
  }

  /** When an API logged each upload request: the intake, first request to last answer. */
  intake(apis, run) {
    let last = 0;
    let uploads = 0;
    for (const host of apis) {
      const file = path.join(this.logs, `${host}.log`);
      if (!existsSync(file)) continue;
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line.includes('"request completed"') || !line.includes('"POST"')) continue;
        let entry;
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (entry.route !== '/api/lotes/:id/divergencias-rf') continue;
        const time = typeof entry.time === 'number' ? entry.time : Date.parse(entry.time);
        if (time < run.startedAt) continue;
        uploads++;
        last = Math.max(last, time);
      }
    }
    return uploads > 0 ? { requests: uploads, ms: last - run.startedAt, filesPerSec: run.files / ((last - run.startedAt) / 1000) } : null;
  }
}

/** The median run of several (by files/s), and the spread. */
function summarise(runs) {
  const ok = runs.filter((r) => r.everyFileAnswered);
  const rates = ok.map((r) => r.filesPerSec);
  const mid = median(rates);
  const pick =
    ok.find((r) => r.filesPerSec === mid) ?? ok.sort((a, b) => Math.abs(a.filesPerSec - mid) - Math.abs(b.filesPerSec - mid))[0] ?? null;
  const roles = pick ? Object.keys(pick.cpuMsPerFile) : [];
  return {
    runs: runs.length,
    ok: ok.length,
    filesPerSec: mid,
    min: rates.length ? Math.min(...rates) : NaN,
    max: rates.length ? Math.max(...rates) : NaN,
    wallMs: median(ok.map((r) => r.wallMs)),
    cpuMsPerFile: Object.fromEntries(roles.map((role) => [role, median(ok.map((r) => r.cpuMsPerFile[role]))])),
    redisCallsPerFile: median(ok.map((r) => r.redis.callsPerFile)),
    redisTop: pick?.redis.top ?? [],
    oversubscribed: ok.some((r) => r.oversubscribed),
    cores: pick?.cores ?? null,
    sameOutput: runs.every((r) => r.sameOutput),
  };
}

/** Throttling of a run's hosts of one role: mean share of periods throttled, mean throttled time. */
function throttling(run, hosts) {
  const ds = hosts.map((h) => run.hosts[h]).filter(Boolean);
  if (ds.length === 0) return null;
  return {
    share: ds.reduce((sum, d) => sum + (d.periods > 0 ? d.throttled / d.periods : 0), 0) / ds.length,
    throttledMs: ds.reduce((sum, d) => sum + d.throttledMs, 0) / ds.length,
    periods: ds.reduce((sum, d) => sum + d.periods, 0) / ds.length,
  };
}

/** The worker series on the Redis now running: each size, `runs` batches. */
async function workerSeries(bench, series, { filesPerCore, warmupPerHost, dataDir, source, references, apiHost }) {
  const apiUrl = `http://${net.ipOf(apiHost)}:${API_PORT}`;
  const sizes = [];
  for (const { hosts, cores } of series.sizes) {
    if (Date.now() > bench.deadline) {
      log(`${bench.redis.kind}: ${hosts} × ${cores} core not run: past the profile's time limit`);
      sizes.push({ hosts, cores, skipped: true, runs: [] });
      continue;
    }
    const workerHosts = Array.from({ length: hosts }, (_, i) => `wk${i + 1}`);
    const fresh = await bench.ensureWorkers(hosts);
    // New workers (and a fresh API) warm up their JIT on a few files first, unlimited and unmeasured.
    if (fresh.length > 0 && warmupPerHost > 0) {
      const count = warmupPerHost * hosts;
      const warm = await bench.batch({
        label: `${bench.redis.kind}-warmup-${hosts}`,
        folder: linkedFolder(dataDir, source, count),
        files: count,
        url: apiUrl,
        apiDirect: apiUrl,
        roles: {},
        measured: false,
      });
      if (!warm.everyFileAnswered) log(`warm-up ${warm.label} did not end well (exit ${warm.exit}): ${warm.clientSaid ?? ''}`);
    }
    for (const host of workerHosts) bench.group(host).setQuota(cores);
    const files = Math.max(1, Math.round(filesPerCore * cores * hosts));
    const folder = linkedFolder(dataDir, source, files);
    references[files] ??= await localLote(folder, path.join(bench.runDir, `local-${files}.csv`));
    rmSync(path.join(bench.runDir, `local-${files}.csv`), { force: true });
    const runs = [];
    for (let i = 1; i <= series.runs && Date.now() < bench.deadline; i++) {
      const result = await bench.batch({
        label: `${bench.redis.kind}-wk${hosts}x${cores}-${i}`,
        folder,
        files,
        local: references[files],
        url: apiUrl,
        apiDirect: apiUrl,
        roles: { workers: workerHosts, api: [apiHost], cli: ['load'], redis: REDIS_HOSTS },
      });
      result.throttling = { workers: throttling(result, workerHosts) };
      runs.push(result);
      log(
        `${bench.redis.kind}: ${hosts} × ${cores} core, run ${i}: ${files} files in ${(result.wallMs / 1000).toFixed(1)} s, ` +
          `${result.filesPerSec.toFixed(2)} files/s, workers ${result.cpuMsPerFile.workers.toFixed(1)} ms/file, ` +
          `throttled ${(100 * result.throttling.workers.share).toFixed(0)} %${result.everyFileAnswered ? '' : ' NOT EVERY FILE ANSWERED'}` +
          `${result.sameOutput ? '' : ' OUTPUT DIFFERS'}`,
      );
    }
    sizes.push({ hosts, cores, files, runs, summary: summarise(runs), throttling: medianThrottling(runs) });
  }
  return sizes;
}

function medianThrottling(runs) {
  const ts = runs.map((r) => r.throttling?.workers ?? r.throttling?.api).filter(Boolean);
  if (ts.length === 0) return null;
  return {
    share: median(ts.map((t) => t.share)),
    throttledMs: median(ts.map((t) => t.throttledMs)),
    periods: median(ts.map((t) => t.periods)),
  };
}

/** The API series: 1, 2, 3 API hosts under a quota behind Caddy, workers that do not limit. */
async function apiSeries(bench, cfg, { dataDir, source, references, warmupPerHost }) {
  const workerHosts = Array.from({ length: cfg.workers.hosts }, (_, i) => `wk${i + 1}`);
  await bench.ensureWorkers(cfg.workers.hosts);
  for (const host of workerHosts) bench.group(host).setQuota(cfg.workers.cores);
  const folder = linkedFolder(dataDir, source, cfg.files);
  references[cfg.files] ??= await localLote(folder, path.join(bench.runDir, `local-${cfg.files}.csv`));
  rmSync(path.join(bench.runDir, `local-${cfg.files}.csv`), { force: true });
  const counts = [];
  for (const count of cfg.counts) {
    if (Date.now() > bench.deadline) {
      log(`api: ${count} API hosts not run: past the profile's time limit`);
      counts.push({ apis: count, skipped: true, runs: [] });
      continue;
    }
    const apis = Array.from({ length: count }, (_, i) => `api${i + 1}`);
    for (const host of apis) {
      if (!bench.procs[host]?.running) await bench.startApi(host);
    }
    const url = await bench.startProxy(apis);
    const apiDirect = `http://${net.ipOf('api1')}:${API_PORT}`;
    if (warmupPerHost > 0) {
      const n = warmupPerHost * 4 * count;
      const warm = await bench.batch({
        label: `api-warmup-${count}`,
        folder: linkedFolder(dataDir, source, n),
        files: n,
        url,
        apiDirect,
        roles: {},
        measured: false,
      });
      if (!warm.everyFileAnswered) log(`warm-up ${warm.label} did not end well (exit ${warm.exit}): ${warm.clientSaid ?? ''}`);
    }
    for (const host of apis) bench.group(host).setQuota(cfg.apiCores);
    const runs = [];
    for (let i = 1; i <= cfg.runs && Date.now() < bench.deadline; i++) {
      const result = await bench.batch({
        label: `api${count}-${i}`,
        folder,
        files: cfg.files,
        local: references[cfg.files],
        url,
        apiDirect,
        concurrency: cfg.concurrency,
        roles: { workers: workerHosts, api: apis, cli: ['load'], redis: REDIS_HOSTS, proxy: ['proxy'] },
      });
      result.throttling = { api: throttling(result, apis), workers: throttling(result, workerHosts) };
      result.intake = bench.intake(apis, result);
      runs.push(result);
      log(
        `api: ${count} API host(s) × ${cfg.apiCores} core, run ${i}: ${result.filesPerSec.toFixed(2)} files/s, ` +
          `intake ${result.intake ? result.intake.filesPerSec.toFixed(2) : 'n/a'} files/s, API ${result.cpuMsPerFile.api.toFixed(1)} ms/file, ` +
          `API throttled ${(100 * result.throttling.api.share).toFixed(0)} %, workers ${(100 * result.throttling.workers.share).toFixed(0)} %` +
          `${result.everyFileAnswered ? '' : ' NOT EVERY FILE ANSWERED'}${result.sameOutput ? '' : ' OUTPUT DIFFERS'}`,
      );
    }
    const summary = summarise(runs);
    summary.intake = median(runs.map((r) => r.intake?.filesPerSec));
    summary.apiThrottling = median(runs.map((r) => r.throttling.api?.share));
    summary.workerThrottling = median(runs.map((r) => r.throttling.workers?.share));
    counts.push({ apis: count, runs, summary });
  }
  await bench.stop('proxy');
  return counts;
}

/** Efficiency of each size against one host: rate(K) / (K · rate(1) · cores(K)/cores(1)). */
function withEfficiency(sizes) {
  const base = sizes.find((s) => s.hosts === 1 && s.summary?.ok > 0);
  for (const s of sizes) {
    if (!s.summary || !base) continue;
    s.efficiency = s.summary.filesPerSec / (s.hosts * base.summary.filesPerSec * (s.cores / base.cores));
  }
  return sizes;
}

async function commit() {
  try {
    const { stdout } = await run('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, timeout: 10_000 });
    const { stdout: status } = await run('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, timeout: 10_000 });
    return `${stdout.trim()}${status.trim() ? ' (with uncommitted changes)' : ''}`;
  } catch {
    return 'unknown';
  }
}

function cleanup() {
  const removed = net.removeLeftovers();
  const groups = removeLeftoverGroups(PREFIX);
  return { ...removed, groups: groups.groups, stuckGroups: groups.stuck };
}

/** The pid of a live run holding the lock, or null (no lock, or its owner is gone). */
function lockOwner() {
  if (!existsSync(LOCK)) return null;
  const owner = Number(readFileSync(LOCK, 'utf8'));
  if (!Number.isInteger(owner) || owner <= 0 || owner === process.pid) return null;
  try {
    process.kill(owner, 0);
    return owner;
  } catch {
    return null; // its owner is gone: a leftover
  }
}

/** The whole profile; resolves with the exit code. */
export async function main(argv = process.argv.slice(2)) {
  let args;
  try {
    ({ values: args } = parseArgs({
      args: argv,
      options: {
        profile: { type: 'string', default: 'long' },
        report: { type: 'string' },
        out: { type: 'string' },
        chart: { type: 'string' },
        series: { type: 'string' },
        runs: { type: 'string' },
        'files-per-core': { type: 'string' },
        cleanup: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    console.error(`escala: ${err.message}`);
    return 2;
  }
  if (process.getuid?.() !== 0) {
    console.error('escala: needs root (network namespaces and cgroups)');
    return 2;
  }
  if (!cgroupsAvailable()) {
    console.error('escala: needs the cgroup v1 cpu and cpuacct hierarchies under /sys/fs/cgroup');
    return 2;
  }
  if (args.cleanup) {
    // Never under a live run's feet (a test's cleanup while someone measures by hand).
    const owner = lockOwner();
    if (owner !== null) {
      console.error(`escala: a run (pid ${owner}) holds ${LOCK}: nothing removed`);
      return 2;
    }
    const removed = cleanup();
    log(`removed ${removed.namespaces} namespaces, ${removed.links} links, ${removed.groups} groups`);
    return 0;
  }
  const base = PROFILES[args.profile];
  if (!base) {
    console.error(`escala: --profile must be one of ${Object.keys(PROFILES).join(', ')}`);
    return 2;
  }
  const profile = structuredClone(base);
  try {
    applyOverrides(profile, args);
  } catch (err) {
    if (err instanceof Usage) {
      console.error(`escala: ${err.message}`);
      return 2;
    }
    throw err;
  }
  if (profile.api) {
    try {
      await run('caddy', ['version'], { timeout: 10_000 });
    } catch {
      console.error('escala: the API series needs caddy in PATH (Debian: apt-get install -y caddy)');
      return 2;
    }
  }

  // One run at a time: the names, addresses and groups are fixed.
  const owner = lockOwner();
  if (owner !== null) {
    console.error(`escala: another run (pid ${owner}) holds ${LOCK}`);
    return 2;
  }
  writeFileSync(LOCK, String(process.pid));

  const runDir = args.out ? path.resolve(args.out) : path.join(os.tmpdir(), `censo-escala-${Date.now()}`);
  // By default CLUSTER.md and cluster/escala.svg; a report elsewhere (a test's) gets its chart beside it.
  const report = path.resolve(args.report ?? path.join(ROOT, 'CLUSTER.md'));
  const chart = path.resolve(
    args.chart ?? (args.report ? path.join(path.dirname(report), 'escala.svg') : path.join(ROOT, 'cluster/escala.svg')),
  );
  let tornDown = false;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    await killAll().catch(() => undefined);
    const left = cleanup();
    if (left.stuckGroups.length > 0) log(`could not remove groups ${left.stuckGroups.join(', ')}`);
    try {
      unlinkSync(LOCK);
    } catch {
      // already gone
    }
  };
  const onSignal = (signal) => {
    log(`${signal}: tearing down`);
    void teardown().then(() => process.exit(1));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  let code = 1;
  try {
    const removed = cleanup();
    if (removed.namespaces + removed.links + removed.groups > 0)
      log(`removed a previous run's ${removed.namespaces} namespaces, ${removed.links} links and ${removed.groups} groups`);
    rmSync(runDir, { recursive: true, force: true });
    mkdirSync(runDir, { recursive: true });
    const bench = new Bench({ runDir, profile, profileName: args.profile });
    log(`profile ${args.profile}, run folder ${runDir}`);

    const dataDir = path.join(runDir, 'data');
    const { file: source, rowsPerFile } = await schoolReturn(dataDir);
    const references = {};

    const maxWorkers = Math.max(
      ...[profile.workers, profile.cluster].filter(Boolean).flatMap((s) => s.sizes.map((z) => z.hosts)),
      profile.api?.workers.hosts ?? 0,
    );
    const maxApis = Math.max(1, ...(profile.api?.counts ?? []));
    const hosts = [
      ...Array.from({ length: maxApis }, (_, i) => `api${i + 1}`),
      ...Array.from({ length: maxWorkers }, (_, i) => `wk${i + 1}`),
      ...REDIS_HOSTS,
      ...(profile.api ? ['proxy'] : []),
      'load',
    ];
    net.createNetwork(hosts);
    for (const host of hosts) bench.group(host).setQuota(null);
    log(`network ${SUBNET}.0/24: ${hosts.length} hosts, each with its cgroup`);

    const results = { profile: args.profile, settings: profile, rowsPerFile, started: bench.started, series: {} };
    const common = { filesPerCore: profile.filesPerCore, warmupPerHost: profile.warmupPerHost, dataDir, source, references };

    if (profile.workers || profile.api) {
      await bench.startSentinel();
      log('Redis: Sentinel trio ready');
      if (profile.workers) {
        await bench.startApi('api1');
        results.series.workers = withEfficiency(await workerSeries(bench, profile.workers, { ...common, apiHost: 'api1' }));
        results.series.workers.redis = bench.redis.label;
        await bench.stopAll((name) => name.startsWith('wk') || name.startsWith('api'));
      }
      if (profile.api) {
        results.series.api = await apiSeries(bench, profile.api, common);
        await bench.stopAll((name) => name.startsWith('wk') || name.startsWith('api'));
      }
      await bench.stopRedis();
    }
    if (profile.cluster && Date.now() < bench.deadline) {
      await bench.startCluster();
      log('Redis: Cluster ready');
      await bench.startApi('api1');
      results.series.cluster = withEfficiency(await workerSeries(bench, profile.cluster, { ...common, apiHost: 'api1' }));
      results.series.cluster.redis = bench.redis.label;
      await bench.stopAll((name) => name.startsWith('wk') || name.startsWith('api'));
      await bench.stopRedis();
    }

    // The USL over the equal-size points of the worker series (the 0.05-core hosts are another size).
    const fitSizes = (results.series.workers ?? []).filter((s) => s.summary?.ok > 0 && s.cores === profile.workers.sizes[0].cores);
    results.usl =
      new Set(fitSizes.map((s) => s.hosts)).size >= 2 ? fitUsl(fitSizes.map((s) => ({ n: s.hosts, rate: s.summary.filesPerSec }))) : null;
    results.finished = Date.now();
    results.machine = {
      cores: os.availableParallelism(),
      cpu: os.cpus()[0]?.model ?? 'unknown',
      memGiB: os.totalmem() / 2 ** 30,
      node: process.version,
      redis: (await run('redis-server', ['--version'], { timeout: 10_000 })).stdout.trim().split(' ')[2]?.replace('v=', '') ?? 'unknown',
      caddy: profile.api ? (await run('caddy', ['version'], { timeout: 10_000 })).stdout.trim().split(' ')[0] : null,
      commit: await commit(),
      load: os.loadavg(),
    };
    results.runDir = runDir;
    const allRuns = [...(results.series.workers ?? []), ...(results.series.cluster ?? []), ...(results.series.api ?? [])].flatMap(
      (s) => s.runs,
    );
    results.ok = allRuns.length > 0 && allRuns.every((r) => r.everyFileAnswered && r.sameOutput);
    await writeFile(path.join(runDir, 'results.json'), JSON.stringify(results, null, 2));

    mkdirSync(path.dirname(chart), { recursive: true });
    await writeFile(chart, renderChart(results));
    const existing = await readFile(report, 'utf8').catch(() => '');
    const chartLink = path.relative(path.dirname(report), chart).split(path.sep).join('/');
    await writeFile(report, withEscalaSection(existing, renderSection(results, { chartLink })));
    log(`report ${report}, chart ${chart}, results ${path.join(runDir, 'results.json')}`);
    code = results.ok ? 0 : 1;
  } catch (err) {
    console.error(`escala: the run broke: ${err instanceof Error ? err.stack : String(err)}`);
  } finally {
    await teardown();
    // The run folder keeps results.json and the logs; the batches, uploads and Redis files go.
    for (const dir of ['data', 'uploads', 'out', 'redis', 'redis-cluster', 'caddy'])
      rmSync(path.join(runDir, dir), { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const left = { namespaces: net.existing().namespaces.length, groups: groupsWithPrefix(PREFIX).length };
  if (left.namespaces + left.groups > 0) {
    log(`left behind: ${left.namespaces} namespaces, ${left.groups} groups`);
    code = 1;
  }
  return code;
}

/** --runs, --files-per-core and --series narrow a profile (for a quicker look by hand). */
function applyOverrides(profile, args) {
  if (args.series !== undefined) {
    const wanted = new Set(args.series.split(',').map((s) => s.trim()));
    for (const name of wanted) if (!['workers', 'cluster', 'api'].includes(name)) throw new Usage(`unknown series ${name}`);
    for (const name of ['workers', 'cluster', 'api']) if (!wanted.has(name)) profile[name] = null;
    if (wanted.has('cluster') && !profile.cluster)
      profile.cluster = { sizes: profile.workers?.sizes ?? [size(1, 0.1), size(2, 0.1)], runs: 1 };
    if (wanted.has('api') && !profile.api)
      profile.api = { counts: [1, 2], apiCores: 0.05, workers: size(2, 0.25), files: 200, runs: 1, concurrency: 4 };
    if (wanted.has('workers') && !profile.workers) profile.workers = PROFILES[args.profile].workers;
  }
  if (args.runs !== undefined) {
    const runs = Number(args.runs);
    if (!Number.isInteger(runs) || runs < 1 || runs > 10) throw new Usage('--runs must be 1 to 10');
    for (const name of ['workers', 'cluster', 'api']) if (profile[name]) profile[name].runs = runs;
  }
  if (args['files-per-core'] !== undefined) {
    const n = Number(args['files-per-core']);
    if (!Number.isInteger(n) || n < 10 || n > 5_000) throw new Usage('--files-per-core must be 10 to 5000');
    profile.filesPerCore = n;
  }
  if (!profile.workers && !profile.cluster && !profile.api) throw new Usage('no series left to run');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(await main());
}
