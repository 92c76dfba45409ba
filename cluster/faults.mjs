// The fault schedule: every kind of fault once, in an order and on targets a seed chooses, with
// a healthy gap between them so each recovery can be seen on its own. Each fault is recorded in
// the history with when it began and when it was healed.
import { heal, isolate } from './net.mjs';
import { REDIS_HOSTS, WORKER_HOSTS, API_HOSTS } from './topology.mjs';
import { sleep, until } from './procs.mjs';

export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    let t = (state += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KINDS = [
  'worker-isolated',
  'worker-paused',
  'worker-killed',
  'api-killed',
  'redis-master-killed',
  'redis-unreachable',
  'bucket-unreachable',
  'rolling-restart',
];

/**
 * A rolling upgrade's order: a worker first, then API and worker in turn, so a worker that knows
 * the new job contract runs before any API sends such jobs.
 */
export const ROLLING_ORDER = WORKER_HOSTS.flatMap((worker, i) => [worker, ...(API_HOSTS[i] ? [API_HOSTS[i]] : [])]);

/** What happens when, decided before the run from the seed (the Redis master is found at run time). */
export function planFaults(seed, profile) {
  const random = mulberry32(seed);
  const order = [...KINDS];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const pickOf = (list) => list[Math.floor(random() * list.length)];
  return order.map((kind) => {
    const gapMs = profile.gapMs + Math.floor(random() * profile.gapJitterMs);
    switch (kind) {
      case 'worker-isolated':
        // Past its lock and a stalled check: another worker must take its job over.
        return { kind, target: pickOf(WORKER_HOSTS), durationMs: profile.lockMs + profile.stalledMs + 2_000, gapMs };
      case 'worker-paused':
        // SIGSTOP past its lock, then SIGCONT: it finishes late, after its job was taken over.
        return { kind, target: pickOf(WORKER_HOSTS), durationMs: profile.lockMs + 3_000, gapMs };
      case 'worker-killed':
        return { kind, target: pickOf(WORKER_HOSTS), durationMs: 2_000, gapMs };
      case 'api-killed':
        return { kind, target: pickOf(API_HOSTS), durationMs: 3_000, gapMs };
      case 'redis-master-killed':
        return { kind, target: 'master', durationMs: profile.masterDownMs, gapMs };
      case 'redis-unreachable':
        return { kind, target: REDIS_HOSTS.join('+'), durationMs: profile.redisDownMs, gapMs };
      case 'bucket-unreachable':
        return { kind, target: 's3', durationMs: profile.bucketDownMs, gapMs };
      case 'rolling-restart':
        // As long as the replacements take: each process leaves, the next version starts and is ready.
        return { kind, target: ROLLING_ORDER.join(' → '), order: ROLLING_ORDER, durationMs: null, gapMs };
      default:
        throw new Error(`unknown fault ${kind}`);
    }
  });
}

/** Runs one fault to its heal; returns its history record. */
export async function runFault(fault, topology, log) {
  const { procs } = topology;
  const record = { kind: 'fault', name: fault.kind, target: fault.target, start: Date.now() };
  log(`fault: ${fault.kind} on ${fault.target}${fault.durationMs === null ? ', one at a time' : ` for ${fault.durationMs} ms`}`);
  switch (fault.kind) {
    case 'worker-isolated':
      isolate(fault.target);
      await sleep(fault.durationMs);
      heal(fault.target);
      break;
    case 'worker-paused':
      procs[fault.target].signal('SIGSTOP');
      await sleep(fault.durationMs);
      procs[fault.target].signal('SIGCONT');
      break;
    case 'worker-killed':
      await procs[fault.target].kill();
      await sleep(fault.durationMs);
      await topology.restartWorker(fault.target);
      await topology.waitReady([fault.target]);
      break;
    case 'api-killed':
      record.killedAt = Date.now();
      await procs[fault.target].kill();
      await sleep(fault.durationMs);
      await topology.restartApi(fault.target);
      await topology.waitReady([fault.target]);
      break;
    case 'redis-master-killed': {
      const master = await topology.currentMaster();
      if (!master) throw new Error('no sentinel names a master');
      record.target = master;
      record.killedAt = Date.now();
      await procs[`redis-${master}`].kill();
      const promoted = await until(
        async () => {
          const now = await topology.currentMaster();
          return now !== null && now !== master;
        },
        { timeoutMs: 60_000, everyMs: 100 },
      );
      record.promotedAt = promoted ? Date.now() : null;
      record.newMaster = await topology.currentMaster();
      await sleep(Math.max(0, record.start + fault.durationMs - Date.now()));
      await topology.restartRedis(master);
      break;
    }
    case 'redis-unreachable':
      for (const host of REDIS_HOSTS) isolate(host);
      await sleep(fault.durationMs);
      for (const host of REDIS_HOSTS) heal(host);
      break;
    case 'bucket-unreachable':
      isolate('s3');
      await sleep(fault.durationMs);
      heal('s3');
      break;
    case 'rolling-restart':
      // To the next version: the same build, its job contract one higher (release.mjs).
      record.contract = topology.contract;
      record.steps = [];
      for (const host of fault.order) {
        const step = await topology.upgrade(host);
        log(
          `  ${host}: exited (${step.exit}) ${step.exitedAt - step.stoppedAt} ms after SIGTERM, next version ready ${step.readyAt - step.exitedAt} ms later`,
        );
        record.steps.push(step);
      }
      break;
  }
  record.end = Date.now();
  return record;
}
