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
//                           [--series workers,cluster,api] [--runs N] [--files-per-core N] [--shards N]
//                           [--api-files N] [--api-cores C] [--api-warmup N] [--api-counts 1,2,3]
//                           [--api-concurrency N] [--minutes N]
//   node cluster/escala.mjs --cleanup     removes what an interrupted run left behind
//   npm run cluster -- escala [same options]   (cluster/run.mjs hands the rest over)
//
// The report is the section of CLUSTER.md between `<!-- escala:inicio -->` and
// `<!-- escala:fim -->` (sections.mjs), with a chart (SVG) beside the report; the run folder keeps
// results.json and every process's log. Exit code 0 when every run finished with every file
// answered and the output byte-identical to the local `censo lote`, 1 otherwise, 2 for usage.
import { existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { schoolReturn } from '../bench/cli.mjs';
import { cgroupsAvailable, groupsWithPrefix, removeLeftoverGroups } from './cgroup.mjs';
import { renderChart, renderSection } from './escala-report.mjs';
import { Bench } from './escala/bench.mjs';
import { apiSeries, withEfficiency, workerSeries } from './escala/series.mjs';
import { LOCK, log, MAX_APIS, net, PREFIX, PROFILES, REDIS_HOSTS, run, size, SUBNET, Usage } from './escala/settings.mjs';
import { ROOT, killAll } from './procs.mjs';
import { withEscalaSection } from './sections.mjs';
import { fitUsl } from './usl.mjs';

export { ESCALA_HOSTS, PREFIX, PROFILES, SUBNET, net } from './escala/settings.mjs';

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
        'api-files': { type: 'string' },
        'api-cores': { type: 'string' },
        'api-warmup': { type: 'string' },
        'api-counts': { type: 'string' },
        'api-concurrency': { type: 'string' },
        minutes: { type: 'string' },
        shards: { type: 'string' },
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

/**
 * --runs, --files-per-core and --series narrow a profile (for a quicker look by hand); --api-files
 * and --api-cores give the API series a longer batch or larger API hosts (issue 55: at 0.05 core and
 * 480 files, ten requests, the two-API ratio moved from 1.3 to 1.9 between runs).
 */
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
  if (args['api-files'] !== undefined) {
    const n = Number(args['api-files']);
    if (!profile.api || !Number.isInteger(n) || n < 50 || n > 20_000)
      throw new Usage('--api-files must be 50 to 20000, with the api series');
    profile.api.files = n;
  }
  if (args['api-cores'] !== undefined) {
    const c = Number(args['api-cores']);
    if (!profile.api || !(c >= 0.01 && c <= 1)) throw new Usage('--api-cores must be 0.01 to 1, with the api series');
    profile.api.apiCores = c;
  }
  if (args['api-warmup'] !== undefined) {
    // A fresh API spends more a file on its first thousands (JIT, first connections): warm APIs
    // compare the per-file cost of one and of more, a fresh one's is its own figure.
    const n = Number(args['api-warmup']);
    if (!profile.api || !Number.isInteger(n) || n < 0 || n > 20_000)
      throw new Usage('--api-warmup must be 0 to 20000 files per API, with the api series');
    profile.api.warmupPerApi = n;
  }
  if (args['api-counts'] !== undefined) {
    // Which API counts to run (default 1, 2, 3): one count alone, or one API at several client rates.
    const counts = args['api-counts'].split(',').map(Number);
    if (!profile.api || counts.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_APIS))
      throw new Usage(`--api-counts must be a list of 1 to ${MAX_APIS}, with the api series`);
    profile.api.counts = counts;
  }
  if (args['api-concurrency'] !== undefined) {
    // The client's requests in flight (default 4): fewer offer the APIs less than they can take, so
    // one API's cost a file can be read at the rate each of several APIs runs at.
    const n = Number(args['api-concurrency']);
    if (!profile.api || !Number.isInteger(n) || n < 1 || n > 16) throw new Usage('--api-concurrency must be 1 to 16, with the api series');
    profile.api.concurrency = n;
  }
  if (args.minutes !== undefined) {
    // The profile's time limit: a longer batch (--api-files) or more runs need more than its default.
    const minutes = Number(args.minutes);
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > 120) throw new Usage('--minutes must be 1 to 120');
    profile.maxMs = minutes * 60_000;
  }
  if (args.shards !== undefined) {
    // QUEUE_SHARDS for every API and worker (issue 55): with the cluster series, each shard's slot on its master.
    const n = Number(args.shards);
    if (!Number.isInteger(n) || n < 1 || n > 8) throw new Usage('--shards must be 1 to 8');
    profile.shards = n;
  }
  if (!profile.workers && !profile.cluster && !profile.api) throw new Usage('no series left to run');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(await main());
}
