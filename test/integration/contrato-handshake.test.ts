// Group jobs on by default, safely (issue 47, SPEC §12): workers announce the contract they read
// (readers.ts) and the API queues group jobs only while every connected worker reads them; a job
// left by a rollback for workers no longer there is relabelled for the live ones, once, whichever
// API gets to it. Worker processes of this build playing each version, the real API, the local Redis.
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CORE_JOB_CONTRACT_VERSION,
  GROUP_JOB,
  GROUP_JOB_CONTRACT_VERSION,
  JOB_CONTRACT_VERSION,
  TASK_QUEUE,
  readerKeys,
} from '@censo/shared';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { useQueuePrelude } from '../helpers/queue-prelude.js';
import { createLote, sendReturns, startHarness, tarefaIds, waitForTarefa, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const N = JOB_CONTRACT_VERSION;

const prelude = useQueuePrelude();

const harnesses: Harness[] = [];
const processes: ServiceProcess[] = [];
afterEach(async () => {
  for (const worker of processes.splice(0)) {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
  }
  // The second API of a test shares the first's keys: it goes first, the first then deletes them.
  for (const harness of harnesses.splice(0).reverse()) await harness.dispose();
});

async function api(lines: Array<Record<string, unknown>>, sameAs?: Harness): Promise<Harness> {
  const server = await startHarness('queue', {
    redisUrl: prelude.url,
    noWorker: true,
    logLines: lines,
    // The default TAREFAS_POR_JOB (50), whatever the run's TEST_TAREFAS_POR_JOB.
    env: { TAREFAS_POR_JOB: '50' },
    ...(sameAs ? { sameAs } : {}),
  });
  harnesses.push(server);
  return server;
}

/** A worker process of this build on `server`'s queue, playing `version` (announced unless `announce` is false). */
async function worker(server: Harness, options: { version?: number; announce?: boolean; ttlMs?: number } = {}): Promise<ServiceProcess> {
  const child = startServiceProcess('test/helpers/versioned-worker.mjs', {
    REDIS_URL: prelude.url,
    QUEUE_PREFIX: server.config.queuePrefix,
    UPLOAD_DIR: server.uploadDir,
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '1',
    WORKER_LOCK_DURATION_MS: '4000',
    ...(options.version === undefined ? {} : { WORKER_CONTRACT_VERSION: String(options.version) }),
    ...(options.announce === false ? { WORKER_ANNOUNCE: '0' } : {}),
    ...(options.ttlMs === undefined ? {} : { WORKER_ANNOUNCE_TTL_MS: String(options.ttlMs) }),
  });
  processes.push(child);
  await child.line('worker ready', onThisMachine(30_000));
  return child;
}

const announced = async (server: Harness) =>
  prelude.redis.zrangebyscore(readerKeys(server.config.queuePrefix, TASK_QUEUE).readers, Date.now(), '+inf');

async function send(server: Harness, lote: string, count: number): Promise<string[]> {
  const answer = await sendReturns(server, lote, prelude.json, count);
  expect(answer.status).toBe(202);
  return tarefaIds(answer);
}

/** The `job done` lines of a worker: which job ran which task, under which contract. */
const jobsDone = (child: ServiceProcess) =>
  child.lines.filter((line) => line.msg === 'job done') as Array<{ jobId: string; tarefa?: string; contract: number }>;

function tasksQueue(server: Harness) {
  return new Queue(TASK_QUEUE, { connection: prelude.redis, prefix: server.config.queuePrefix });
}

describe('contract handshake: group jobs only for workers that read them', () => {
  it('only workers of this version: a request with several returns is one group job, the API says group jobs are on', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const server = await api(lines);
    const newer = await worker(server);
    await waitFor(async () => (await announced(server)).length === 1, { what: 'the announcement' });
    expect(await announced(server)).toEqual([expect.stringMatching(new RegExp(`^censo-[0-9a-f]+\\|${N}$`))]);

    const ids = await send(server, await createLote(server), 3);
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    await waitFor(() => jobsDone(newer).length === 3, { what: "the worker's three job done lines" });
    const done = jobsDone(newer);
    expect(new Set(done.map((line) => line.jobId)).size).toBe(1);
    expect(done[0]!.jobId.startsWith('g-')).toBe(true);
    expect(done.map((line) => line.tarefa).sort()).toEqual([...ids].sort());
    expect(done.every((line) => line.contract === GROUP_JOB_CONTRACT_VERSION)).toBe(true);
    expect(lines.find((line) => line.msg === 'group jobs on')).toMatchObject({ tarefasPorJob: 50, workers: 1, versoes: [N] });
  });

  it('a worker of an older version connected (it announces nothing): a job per task, the API says why; every task concluida', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const server = await api(lines);
    const newer = await worker(server);
    // Older than the jobs of the core (contract 4, issue 55, changed no job: a worker of 3 still runs them).
    const older = await worker(server, { version: CORE_JOB_CONTRACT_VERSION - 1, announce: false });
    await waitFor(async () => (await tasksQueue(server).getWorkersCount()) === 2, { what: 'both workers connected' });

    const ids = await send(server, await createLote(server), 3);
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    const done = [...jobsDone(newer), ...jobsDone(older)];
    // Each task its own job (its id), none of them a group; and none ran on the older worker.
    expect(done.map((line) => line.jobId).sort()).toEqual([...ids].sort());
    expect(jobsDone(older)).toEqual([]);
    expect(lines.find((line) => line.msg === 'group jobs off: a job per task')).toMatchObject({
      workers: 2,
      motivo: expect.stringContaining('1 de 2 workers'),
    });
  });

  it('a rollback while group jobs of the next contract wait: the workers of this version get them relabelled, once across two APIs, and no task is stranded', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const otherLines: Array<Record<string, unknown>> = [];
    const server = await api(lines);
    await api(otherLines, server);
    const next = await worker(server, { version: N + 1 });
    await waitFor(async () => (await announced(server)).length === 1, { what: 'the announcement' });
    const queue = tasksQueue(server);
    await queue.pause();
    const ids = await send(server, await createLote(server), 4);
    const [group] = await queue.getJobs(['waiting']);
    expect(group?.name).toBe(GROUP_JOB);
    // As the next version's API queues it: the same job, its contract one higher.
    await group!.updateData({ ...group!.data, contract: N + 1 });

    // The rollback: the next version's worker leaves, one of this version takes its place.
    expect(await next.stop()).toBe(0);
    const current = await worker(server);
    await queue.resume();
    for (const id of ids) expect((await waitForTarefa(server, id, undefined, 30_000)).estado).toBe('concluida');

    const relabelled = [...lines, ...otherLines].filter((line) => line.msg === 'stranded job relabelled for the live workers');
    expect(relabelled).toEqual([expect.objectContaining({ jobId: group!.id, from: N + 1, to: GROUP_JOB_CONTRACT_VERSION })]);
    expect(current.lines.some((line) => line.msg === 'job of a newer contract left for a newer worker')).toBe(true);
    // Every task ran once, in the group, under a contract this worker knows.
    const done = jobsDone(current);
    expect(done.map((line) => line.tarefa).sort()).toEqual([...ids].sort());
    expect(done.every((line) => line.jobId === group!.id && line.contract <= N)).toBe(true);
    expect(await prelude.redis.zcard(readerKeys(server.config.queuePrefix, TASK_QUEUE).handedBack)).toBe(0);
  });

  it("a worker killed (SIGKILL) stops counting once its announcement's TTL passes; one that closes withdraws at once", async () => {
    const server = await api([]);
    const killed = await worker(server, { ttlMs: 1_500 });
    const closed = await worker(server, { ttlMs: 60_000 });
    await waitFor(async () => (await announced(server)).length === 2, { what: 'both announcements' });

    expect(await closed.stop()).toBe(0);
    expect(await announced(server)).toHaveLength(1);

    killed.child.kill('SIGKILL');
    // Still there just after (no goodbye), gone within its TTL.
    expect(await announced(server)).toHaveLength(1);
    await waitFor(async () => (await announced(server)).length === 0, {
      timeoutMs: onThisMachine(5_000),
      what: 'the announcement to lapse',
    });
    expect(await tasksQueue(server).getWorkersCount()).toBe(0);
  });
});
