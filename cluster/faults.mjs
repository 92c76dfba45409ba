// The fault schedule: every kind of fault once, in an order and on targets a seed chooses, with
// a healthy gap between them so each recovery can be seen on its own. Each fault is recorded in
// the history with when it began and when it was healed.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Queue } from 'bullmq';
import { TASK_QUEUE, closeRedisClient, createRedisClient, loadConfig } from '@censo/shared';
import { heal, isolate } from './net.mjs';
import { REDIS_HOSTS, WORKER_HOSTS, API_HOSTS } from './topology.mjs';
import { ROOT, sleep, until } from './procs.mjs';

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

/**
 * The rollback's order (docs/operacao.md): the APIs first, so no job of the next contract is
 * queued once the workers start going back; then the workers. Group jobs the next version queued
 * and no worker of this one reads are relabelled by this version's APIs (SPEC §12).
 */
export const ROLLBACK_ORDER = [...API_HOSTS, ...WORKER_HOSTS];

/** Returns in the rollback's batch request: with three workers, group jobs (TAREFAS_POR_JOB default 50) of them all. */
const ROLLBACK_RETURNS = 6;

/** How long an API takes the workers' contracts as it last read them (READERS_CACHE_MS), plus a margin. */
const READERS_SEEN_MS = 6_000;

/** The batch of the rollback must end within this after the last step (a hand-back, a housekeeping pass, a relabel, the jobs). */
const ROLLBACK_TASKS_MS = 60_000;

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
      record.rollback = await rollBack(topology, log);
      break;
  }
  record.end = Date.now();
  return record;
}

/**
 * The rolling upgrade's way back (SPEC §12): with every process on the next version, a batch's
 * returns are sent in one request while the tasks' queue is paused, so its group jobs of the next
 * contract still wait when the last worker that reads them leaves; then APIs and workers go back
 * to this build one at a time, the queue resumes, and every task must end concluida. The batch is
 * deleted afterwards (its records are not the run's to keep).
 */
async function rollBack(topology, log) {
  const out = { start: Date.now(), steps: [], tarefas: [], queued: [], estados: {} };
  const config = loadConfig({ ...topology.serviceEnv });
  const redis = createRedisClient(config.redis, 'fail-fast', { enableOfflineQueue: true, commandTimeout: 10_000 });
  redis.on('error', () => undefined);
  const queue = new Queue(TASK_QUEUE, { connection: redis, prefix: config.queuePrefix });
  const api = topology.apiUrls[0];
  const headers = { 'x-api-key': topology.settings.API_KEY };
  try {
    // Every worker now announces the next contract; the APIs' view of them is renewed meanwhile.
    await sleep(READERS_SEEN_MS);
    await queue.pause();
    try {
      const created = await fetch(`${api}/api/lotes`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ nome: 'rollback' }),
      });
      out.lote = (await created.json()).id;
      const json = await readFile(path.join(ROOT, 'test/fixtures/basico/retorno.json'));
      const form = new FormData();
      for (let i = 0; i < ROLLBACK_RETURNS; i++) {
        form.append('referencia', `rollback-${i}`);
        form.append('retorno', new Blob([json]), `escola-${i}.json`);
      }
      const sent = await fetch(`${api}/api/lotes/${out.lote}/divergencias-rf`, { method: 'POST', headers, body: form });
      out.status = sent.status;
      out.tarefas = sent.status === 202 ? (await sent.json()).tarefas.map((t) => t.id) : [];
      out.queued = (await queue.getJobs(['waiting', 'prioritized', 'delayed'])).map((job) => ({
        id: job.id,
        name: job.name,
        contract: job.data?.contract ?? null,
      }));
      log(`  rollback: ${out.tarefas.length} tasks queued as ${out.queued.map((j) => `${j.name}@${j.contract}`).join(', ') || 'nothing'}`);
      for (const host of ROLLBACK_ORDER) {
        const step = await topology.downgrade(host);
        log(
          `  ${host} back: exited (${step.exit}) ${step.exitedAt - step.stoppedAt} ms after SIGTERM, this version ready ${step.readyAt - step.exitedAt} ms later`,
        );
        out.steps.push(step);
      }
    } finally {
      await queue.resume();
    }
    out.resumedAt = Date.now();
    const estados = async () => {
      const seen = {};
      for (const id of out.tarefas) {
        const answer = await fetch(`${api}/api/tarefas/${id}`, { headers, signal: AbortSignal.timeout(5_000) }).catch(() => null);
        seen[id] = answer?.ok ? (await answer.json()).estado : `http ${answer?.status ?? 0}`;
      }
      return seen;
    };
    await until(
      async () => {
        out.estados = await estados();
        return Object.values(out.estados).every((estado) => ['concluida', 'falhou', 'cancelada'].includes(estado));
      },
      { timeoutMs: ROLLBACK_TASKS_MS, everyMs: 1_000 },
    );
    out.endedAt = Date.now();
    log(
      `  rollback: tasks ${JSON.stringify(countOf(Object.values(out.estados)))} ${out.endedAt - out.resumedAt} ms after the queue resumed`,
    );
    if (out.lote) await fetch(`${api}/api/lotes/${out.lote}`, { method: 'DELETE', headers }).catch(() => undefined);
  } finally {
    await queue.close().catch(() => undefined);
    await closeRedisClient(redis).catch(() => undefined);
  }
  return out;
}

function countOf(values) {
  const out = {};
  for (const value of values) out[value] = (out[value] ?? 0) + 1;
  return out;
}
