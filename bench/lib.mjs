// Small helpers shared by the benchmark sections: child processes, statistics, tables.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
export const DATA = path.join(ROOT, '.bench');
/** Debian's Chromium, which the page section drives (never a downloaded browser). */
export const CHROMIUM = '/usr/bin/chromium';
const require = createRequire(import.meta.url);

export const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** Each key's median over rounds that all have the same keys. */
export const medians = (rounds) => Object.fromEntries(Object.keys(rounds[0]).map((k) => [k, median(rounds.map((r) => r[k]))]));
export const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

export function fmt(x, digits = 0) {
  if (x === null || x === undefined || Number.isNaN(x)) return 'n/a';
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A markdown table; also what is printed to the terminal. */
export function table(headers, rows) {
  const lines = [`| ${headers.join(' | ')} |`, `|${headers.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

export function versionOf(pkg) {
  try {
    return require(`${pkg}/package.json`).version;
  } catch {
    try {
      // Packages whose exports hide package.json.
      return JSON.parse(readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
    } catch {
      return 'n/a';
    }
  }
}

/** Runs `node <args>` to completion (bounded by `timeoutMs`) and parses its last stdout line as JSON. */
export function runNodeJson(args, { timeoutMs = 300_000, env, node = process.execPath } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`node ${args.join(' ')} exited ${code ?? signal}: ${err.trim().slice(-2000)}`));
      const last = out.trim().split('\n').pop();
      try {
        resolve(JSON.parse(last));
      } catch {
        reject(new Error(`node ${args.join(' ')}: no JSON result (${out.slice(-500)})`));
      }
    });
  });
}

/** Runs `node <args>` to completion and resolves with its wall time in ms (exit 0 required). */
export function runNodeTimed(args, { timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`node ${args.join(' ')} exited ${code ?? signal}: ${err.trim().slice(-2000)}`));
      else resolve(performance.now() - started);
    });
  });
}

/**
 * Runs `node <args>` to completion (exit 0 required) and resolves with its wall time in ms and
 * the CPU seconds of all its threads, sampled from /proc every `sampleMs` until it exits.
 */
export function runNodeTimedCpu(args, { timeoutMs = 300_000, sampleMs = 100, env } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    let cpu = 0;
    const sampler = setInterval(() => (cpu = cpuSecondsOf(child.pid) || cpu), sampleMs);
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearInterval(sampler);
      if (code !== 0) reject(new Error(`node ${args.join(' ')} exited ${code ?? signal}: ${err.trim().slice(-2000)}`));
      else resolve({ ms: performance.now() - started, cpu });
    });
  });
}

/**
 * `BENCH_CPU_PROF=<folder>`: the API, the worker and the burst's CLI are started with `--cpu-prof`
 * (one .cpuprofile per thread, in a folder of that one named for the process), to see where a figure's time
 * goes. Off by default: the profiler costs CPU of its own.
 */
export function profileArgs(name) {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${path.resolve(dir, name)}`];
}

/** A long-running child (API or worker); stdout/stderr go to a log file under .bench/logs. */
export function startProcess(name, args, env) {
  const log = createWriteStream(path.join(DATA, 'logs', `${name}.log`));
  args = [...profileArgs(name), ...args];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  return {
    child,
    pid: child.pid,
    exited,
    /** SIGTERM, then SIGKILL after `graceMs`. */
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident set (current, peak) of a process in MiB, from /proc. */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** CPU seconds (user + system) a live process has used, from /proc (NaN once it is gone). */
export function cpuSecondsOf(pid) {
  try {
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return NaN;
  }
}

/** Polls `url` until it answers `status` (bounded). */
export async function waitFor(url, { status = 200, timeoutMs = 30_000, process: proc } = {}) {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    if (proc && proc.child.exitCode !== null) throw new Error(`${url}: the process exited (${proc.child.exitCode}); see .bench/logs`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === status) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err.message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms (${last})`);
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Deletes every key under a Redis prefix with SCAN (never KEYS, so a shared server is not blocked). */
export async function deleteRedisPrefix(redis, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/**
 * A Node 24 binary for the sections that also run on the image's runtime: `BENCH_NODE24`, else the
 * newest one `.ci/run` unpacked into its cache folder; `null` when there is none.
 */
export function node24() {
  if (process.env.BENCH_NODE24) return process.env.BENCH_NODE24;
  const caches = [
    process.env.CENSO_CI_CACHE,
    '/opt/censo-ci',
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'censo-ci'),
  ];
  for (const cache of caches) {
    if (!cache || !existsSync(cache)) continue;
    const found = readdirSync(cache)
      .filter((name) => /^node-v24\./.test(name) && existsSync(path.join(cache, name, 'bin', 'node')))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    if (found.length > 0) return path.join(cache, found.at(-1), 'bin', 'node');
  }
  return null;
}
