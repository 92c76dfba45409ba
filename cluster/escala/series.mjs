// The scale profile's series (escala.mjs): worker hosts and API hosts, summarised.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { median } from '../../bench/lib.mjs';
import { linkedFolder, localLote } from './measures.mjs';
import { API_PORT, REDIS_HOSTS, log, net } from './settings.mjs';

/** The median run of several (by files/s), and the spread. */
export function summarise(runs) {
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
export function throttling(run, hosts) {
  const ds = hosts.map((h) => run.hosts[h]).filter(Boolean);
  if (ds.length === 0) return null;
  return {
    share: ds.reduce((sum, d) => sum + (d.periods > 0 ? d.throttled / d.periods : 0), 0) / ds.length,
    throttledMs: ds.reduce((sum, d) => sum + d.throttledMs, 0) / ds.length,
    periods: ds.reduce((sum, d) => sum + d.periods, 0) / ds.length,
  };
}

/** The worker series on the Redis now running: each size, `runs` batches. */
export async function workerSeries(bench, series, { filesPerCore, warmupPerHost, dataDir, source, references, apiHost }) {
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

export function medianThrottling(runs) {
  const ts = runs.map((r) => r.throttling?.workers ?? r.throttling?.api).filter(Boolean);
  if (ts.length === 0) return null;
  return {
    share: median(ts.map((t) => t.share)),
    throttledMs: median(ts.map((t) => t.throttledMs)),
    periods: median(ts.map((t) => t.periods)),
  };
}

/** The API series: 1, 2, 3 API hosts under a quota behind Caddy, workers that do not limit. */
export async function apiSeries(bench, cfg, { dataDir, source, references, warmupPerHost }) {
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
    const perApi = cfg.warmupPerApi ?? warmupPerHost * 4;
    if (perApi > 0) {
      const n = perApi * count;
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
      result.apiSplit = splitOf(result, apis);
      runs.push(result);
      log(
        `api: ${count} API host(s) × ${cfg.apiCores} core, run ${i}: ${result.filesPerSec.toFixed(2)} files/s, ` +
          `intake ${result.intake ? result.intake.filesPerSec.toFixed(2) : 'n/a'} files/s, API ${result.cpuMsPerFile.api.toFixed(1)} ms/file, ` +
          `API throttled ${(100 * result.throttling.api.share).toFixed(0)} %, workers ${(100 * result.throttling.workers.share).toFixed(0)} %, ` +
          `API a file: user ${result.apiSplit.userMs.toFixed(2)} ms, system ${result.apiSplit.systemMs.toFixed(2)} ms, ` +
          `switches ${result.apiSplit.voluntary.toFixed(1)} voluntary + ${result.apiSplit.involuntary.toFixed(1)} involuntary` +
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
export function withEfficiency(sizes) {
  const base = sizes.find((s) => s.hosts === 1 && s.summary?.ok > 0);
  for (const s of sizes) {
    if (!s.summary || !base) continue;
    s.efficiency = s.summary.filesPerSec / (s.hosts * base.summary.filesPerSec * (s.cores / base.cores));
  }
  return sizes;
}

/** What `hosts` (the APIs) spent a file: user and system CPU time, and their threads' context switches (issue 55: why two cost more than one). */
function splitOf(result, hosts) {
  const sum = (pick) => hosts.reduce((total, h) => total + pick(result.hosts[h]), 0) / result.files;
  return {
    userMs: sum((d) => d.userMs),
    systemMs: sum((d) => d.systemMs),
    voluntary: sum((d) => d.switches.voluntary),
    involuntary: sum((d) => d.switches.involuntary),
  };
}
