// CPU "sizes" for the scale profile's hosts (escala.mjs): one cgroup v1 group per host, in the cpu
// hierarchy (the CFS quota: `cpu.cfs_quota_us` of every `cpu.cfs_period_us`, so a process limited
// to 10 ms of every 100 ms stands for a host of 0.1 core, and `cpu.stat` says how often it hit the
// limit) and in the cpuacct one (`cpuacct.usage`, the CPU its processes used, in ns). On this
// machine the two controllers are mounted apart, so a group is a directory in each and a process
// enters both. Every group's name starts with a prefix: what an interrupted run left is found and
// removed by the next one, as net.mjs does with namespaces.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const CPU = '/sys/fs/cgroup/cpu';
const CPUACCT = '/sys/fs/cgroup/cpuacct';
/** The scheduler's default period; quotas are whole microseconds of it. */
export const PERIOD_US = 100_000;

/** Whether this machine has the cgroup v1 cpu and cpuacct hierarchies this module writes to. */
export function cgroupsAvailable() {
  return existsSync(path.join(CPU, 'cgroup.procs')) && existsSync(path.join(CPUACCT, 'cpuacct.usage'));
}

const pidsOf = (dir) =>
  readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
    .split('\n')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0);

/** cpu.stat as numbers: nr_periods, nr_throttled, throttled_time (ns), … */
function cpuStat(dir) {
  const stat = {};
  for (const line of readFileSync(path.join(dir, 'cpu.stat'), 'utf8').split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key) stat[key] = Number(value);
  }
  return stat;
}

/** A group of ours (it must not exist yet). */
export function createGroup(name) {
  const dirs = [path.join(CPU, name), path.join(CPUACCT, name)];
  for (const dir of dirs) mkdirSync(dir);
  const [cpuDir, acctDir] = dirs;
  const group = {
    name,
    /** The files a process writes its pid to, to enter the group (procs.mjs `startIn`). */
    procsFiles: dirs.map((dir) => path.join(dir, 'cgroup.procs')),
    /** `cores` of CPU time per wall second at most (0.1: 10 ms of every 100 ms); null: no limit. */
    setQuota(cores) {
      writeFileSync(path.join(cpuDir, 'cpu.cfs_period_us'), String(PERIOD_US));
      const quota = cores === null ? -1 : Math.max(1_000, Math.round(cores * PERIOD_US));
      writeFileSync(path.join(cpuDir, 'cpu.cfs_quota_us'), String(quota));
      group.quota = cores;
    },
    quota: null,
    /** Moves a running process (all its threads) in. */
    addPid(pid) {
      for (const file of group.procsFiles) writeFileSync(file, String(pid));
    },
    pids: () => pidsOf(acctDir),
    /** CPU its processes used since the group was made, in ns (children that exited included). */
    usageNs: () => Number(readFileSync(path.join(acctDir, 'cpuacct.usage'), 'utf8').trim()),
    stat: () => cpuStat(cpuDir),
    /**
     * The readings for a before/after pair: CPU, throttling, CPU split into user and system time
     * (cpuacct.stat, in USER_HZ ticks), and the context switches of its processes' threads (a
     * process that wakes more often for the same work pays a switch and a cold cache each time).
     */
    sample: () => ({ usageNs: group.usageNs(), ...cpuStat(cpuDir), ...acctStat(acctDir), switches: switchesOf(pidsOf(acctDir)) }),
  };
  return group;
}

/** `after - before` of two `sample()`s: CPU ms (all, user, system), periods, throttled periods and time, context switches. */
export function delta(before, after) {
  return {
    cpuMs: (after.usageNs - before.usageNs) / 1e6,
    userMs: (after.user - before.user) * TICK_MS,
    systemMs: (after.system - before.system) * TICK_MS,
    switches: {
      voluntary: after.switches.voluntary - before.switches.voluntary,
      involuntary: after.switches.involuntary - before.switches.involuntary,
    },
    periods: after.nr_periods - before.nr_periods,
    throttled: after.nr_throttled - before.nr_throttled,
    throttledMs: (after.throttled_time - before.throttled_time) / 1e6,
  };
}

/** cpuacct.stat counts USER_HZ ticks, 100 a second on Linux. */
const TICK_MS = 10;

function acctStat(acctDir) {
  const out = { user: 0, system: 0 };
  for (const line of readFileSync(path.join(acctDir, 'cpuacct.stat'), 'utf8').split('\n')) {
    const [key, value] = line.split(' ');
    if (key === 'user' || key === 'system') out[key] = Number(value);
  }
  return out;
}

/** The voluntary and involuntary context switches of every thread of `pids` (threads that ended are not counted). */
function switchesOf(pids) {
  const out = { voluntary: 0, involuntary: 0 };
  for (const pid of pids) {
    let tasks;
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // gone meanwhile
    }
    for (const task of tasks) {
      try {
        const status = readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8');
        out.voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
        out.involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      } catch {
        // the thread ended meanwhile
      }
    }
  }
  return out;
}

const sleepSync = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Removes one group: its processes are SIGKILLed (they are ours: only this module's callers put
 * processes in these groups), then the directories go once the kernel has let the processes go
 * (bounded: 50 tries, 100 ms apart). Returns whether both directories are gone.
 */
export function removeGroup(name) {
  const dirs = [path.join(CPU, name), path.join(CPUACCT, name)].filter((dir) => existsSync(dir));
  for (const dir of dirs) {
    for (const pid of pidsOf(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  for (let attempt = 0; attempt < 50 && dirs.some((dir) => existsSync(dir)); attempt++) {
    for (const dir of dirs) {
      try {
        if (existsSync(dir)) rmdirSync(dir);
      } catch {
        // still busy (a process not yet reaped): next try
      }
    }
    if (dirs.some((dir) => existsSync(dir))) sleepSync(100);
  }
  return dirs.every((dir) => !existsSync(dir));
}

/** Every group whose name starts with `${prefix}-`, in either hierarchy. */
export function groupsWithPrefix(prefix) {
  const names = new Set();
  for (const root of [CPU, CPUACCT]) {
    if (!existsSync(root)) continue;
    for (const entry of readdirSync(root, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name.startsWith(`${prefix}-`)) names.add(entry.name);
    }
  }
  return [...names];
}

/** Removes every group of the prefix (a previous run's leftovers, or this run's at its end). */
export function removeLeftoverGroups(prefix) {
  const names = groupsWithPrefix(prefix);
  const stuck = names.filter((name) => !removeGroup(name));
  return { groups: names.length, stuck };
}
