// Processes started inside a host's namespace (`ip netns exec` execs the command, so the child
// is the process itself and signals reach it), each logging to a file of the run's folder.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nsOf } from './net.mjs';

export const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

/** Every process the run started, for the final teardown. */
const started = new Set();

/**
 * Starts `command args` in `host`'s namespace with only `env` (plus PATH), appending its output
 * to `logFile`. `options.ns` names the namespace when it is not the fault suite's host (the scale
 * profile's own set); `options.cgroupProcs` lists `cgroup.procs` files the process enters before
 * it runs anything (a shell writes its own pid there, then execs: the pid stays the same, so the
 * process and every thread it starts are counted and limited from its first instruction).
 */
export function startIn(host, name, command, args, env, logFile, options = {}) {
  const out = openSync(logFile, 'a');
  const netnsExec = ['ip', 'netns', 'exec', options.ns ?? nsOf(host), command, ...args];
  const cgroupProcs = options.cgroupProcs ?? [];
  const [file, ...argv] =
    cgroupProcs.length === 0
      ? netnsExec
      : [
          'sh',
          '-c',
          `${cgroupProcs.map((_, i) => `echo $$ > "$${i + 1}"`).join(' && ')} && shift ${cgroupProcs.length} && exec "$@"`,
          'sh',
          ...cgroupProcs,
          ...netnsExec,
        ];
  const child = spawn(file, argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const exited = once(child, 'exit').then(([code, signal]) => code ?? signal);
  const handle = {
    name,
    host,
    child,
    logFile,
    exited,
    get pid() {
      return child.pid;
    },
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    signal(sig) {
      if (handle.running) child.kill(sig);
    },
    /** SIGKILL, resolved once the process is gone. */
    async kill() {
      if (!handle.running) return;
      child.kill('SIGCONT'); // a stopped process must run to die
      child.kill('SIGKILL');
      await exited;
    },
    /** SIGTERM, then SIGKILL after `graceMs`. */
    async stop(graceMs = 10_000) {
      if (!handle.running) return;
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  started.add(handle);
  void exited.then(() => started.delete(handle));
  return handle;
}

/** SIGKILLs whatever is still running (the namespaces' own cleanup catches anything else). */
export async function killAll() {
  await Promise.all([...started].map((handle) => handle.kill()));
}

/** User + system CPU seconds a process (all its threads) has used, from /proc. */
export async function cpuSeconds(pid) {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
    return ticks / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it returns true, at most `timeoutMs`; false on timeout. */
export async function until(check, { timeoutMs, everyMs = 200 }) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}
