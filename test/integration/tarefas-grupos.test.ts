// Group jobs (TAREFAS_POR_JOB, issue 35): a request's returns to a batch carried by one queue job
// each `TAREFAS_POR_JOB`, every task still answered, counted, cancelled, timed out and recorded as
// a task of its own (SPEC §7), and a worker of contract 1 leaving the group for a newer one (§9).
// The real API, workers and job pool; the gate holds a task "running" so each state is reached
// without depending on this machine's speed.
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { ERRORS, GROUP_JOB, GROUP_JOB_CONTRACT_VERSION, TASK_QUEUE, finishedItem, httpMessages } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { useGatedWorkers } from '../helpers/gated-workers.js';
import { useQueuePrelude } from '../helpers/queue-prelude.js';
import { keysMatching } from '../helpers/redis.js';
import {
  Gate,
  areaOf,
  createLote,
  monitor,
  request,
  sendReturns,
  startHarness,
  tarefaIds,
  waitForTarefa,
  type Harness,
} from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const DIVERGENCIAS = (basico.expectedDivergencias as { divergencias: unknown[] }).divergencias;

const prelude = useQueuePrelude();

const { track, worker } = useGatedWorkers();

async function harness(
  env: Record<string, string>,
  options: { noWorker?: boolean; intervals?: { reconcileMs?: number } } = {},
): Promise<Harness> {
  const server = await startHarness('queue', { redisUrl: prelude.url, env: { TAREFAS_POR_JOB: '3', ...env }, ...options });
  return track(server);
}

/** `count` copies of the fixture's return in one request to the batch. */
const send = (server: Harness, lote: string, count: number) => sendReturns(server, lote, prelude.json, count);
const idsOf = tarefaIds;
const groupHashes = (server: Harness) => keysMatching(prelude.redis, `${server.config.queuePrefix}:${TASK_QUEUE}:grupo:*`);
const loteCounts = async (server: Harness, lote: string) =>
  (await request(server, 'GET', `/api/lotes/${lote}`)).json().tarefas as Record<string, number>;

async function queuedJobs(server: Harness) {
  const queue = new Queue(TASK_QUEUE, { connection: prelude.redis, prefix: server.config.queuePrefix });
  try {
    return (await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).map((job) => ({
      id: job.id!,
      name: job.name,
      data: job.data,
    }));
  } finally {
    await queue.close();
  }
}

describe('group jobs (TAREFAS_POR_JOB=3)', () => {
  it('five returns in one request: two group jobs (3 + 2), no job per task; each task its own result; nothing left in Redis once recorded', async () => {
    const server = await harness({});
    server.gate.close();
    const lote = await createLote(server);
    const answer = await send(server, lote, 5);
    expect(answer.status).toBe(202);
    const ids = idsOf(answer);
    expect(ids).toHaveLength(5);

    const jobs = await queuedJobs(server);
    expect(jobs.map((job) => job.name)).toEqual([GROUP_JOB, GROUP_JOB]);
    const carried = jobs.map((job) => (job.data as { tarefas: Array<{ id: string }>; contract: number }).tarefas.map((t) => t.id));
    expect(carried.map((group) => group.length).sort()).toEqual([2, 3]);
    expect(carried.flat().sort()).toEqual([...ids].sort());
    for (const job of jobs) expect((job.data as { contract: number }).contract).toBe(GROUP_JOB_CONTRACT_VERSION);
    expect(await groupHashes(server)).toHaveLength(2);

    server.gate.open();
    for (const id of ids) {
      const done = await waitForTarefa(server, id);
      expect(done.estado).toBe('concluida');
      expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).json().divergencias).toEqual(DIVERGENCIAS);
    }
    // Each task's file went through the pool once.
    expect(server.gate.seen.map((job) => job.area).sort()).toEqual([...ids].sort());
    expect(await loteCounts(server, lote)).toMatchObject({ total: 5, concluida: 5, aguardando: 0, processando: 0 });
    await waitFor(async () => (await groupHashes(server)).length === 0, {
      timeoutMs: onThisMachine(5_000),
      what: 'the groups to be forgotten',
    });
    // A group job whose tasks another slot claimed ends at its next look at them (CLAIMED_POLL_MS).
    await waitFor(async () => (await queuedJobs(server)).length === 0, { timeoutMs: onThisMachine(5_000), what: 'the group jobs to end' });
    expect(await prelude.redis.get(`${server.config.queuePrefix}:${TASK_QUEUE}:grupos:aguardando`)).toBe('0');
  });

  it("a group's tasks are processando one at a time, the rest aguardando, each with its own iniciada_em", async () => {
    const server = await harness({}, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 3));
    server.gate.close();
    await worker(server, server.gate);
    await waitFor(() => server.gate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the first task to be held' });
    expect(server.gate.seen[0]!.area).toBe(ids[0]);
    const first = await monitor(server, ids[0]!);
    expect(first.estado).toBe('processando');
    expect(typeof first.iniciada_em).toBe('string');
    for (const id of ids.slice(1)) expect(await monitor(server, id)).toMatchObject({ estado: 'aguardando', iniciada_em: null });
    expect(await loteCounts(server, lote)).toMatchObject({ total: 3, processando: 1, aguardando: 2 });
    server.gate.open();
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
  });

  it('DELETE of a waiting task and of the running one: each gone at once, the running one stopped by its worker, the rest of the group runs', async () => {
    const server = await harness({}, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 3));
    server.gate.close();
    const { lines } = await worker(server, server.gate);
    await waitFor(() => server.gate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the first task to be held' });

    expect((await request(server, 'DELETE', `/api/tarefas/${ids[2]}`)).status).toBe(204);
    expect((await request(server, 'DELETE', `/api/tarefas/${ids[0]}`)).status).toBe(204);
    // The worker that holds the group stops the running task (its signal), and goes on.
    await waitFor(() => server.gate.seen[0]!.signal?.aborted === true, {
      timeoutMs: onThisMachine(10_000),
      what: 'the running task to be stopped',
    });
    expect(lines.filter((line) => line.msg === 'group task cancelled').map((line) => line.tarefa)).toEqual([ids[0]]);
    server.gate.open();
    expect((await waitForTarefa(server, ids[1]!)).estado).toBe('concluida');
    for (const id of [ids[0], ids[2]]) expect((await request(server, 'GET', `/api/tarefas/${id}`)).status).toBe(404);
    // The deleted waiting task never reached the pool.
    expect(server.gate.seen.map((job) => job.area)).toEqual([ids[0], ids[1]]);
    expect(await loteCounts(server, lote)).toMatchObject({ total: 1, concluida: 1 });
    await waitFor(async () => (await groupHashes(server)).length === 0, {
      timeoutMs: onThisMachine(5_000),
      what: 'the group to be forgotten',
    });
    expect(await queuedJobs(server)).toEqual([]);
  });

  it('a task running past JOB_TIMEOUT_MS falhou with the 504 of a task of its own; the next task of its group runs', async () => {
    const server = await harness({ JOB_TIMEOUT_MS: '1500' }, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 2));
    server.gate.close();
    await worker(server, server.gate);
    const late = await waitForTarefa(server, ids[0]!, undefined, 15_000);
    expect(late).toMatchObject({ estado: 'falhou', erro: { status: ERRORS.JOB_TIMEOUT.status, erro: ERRORS.JOB_TIMEOUT.message } });
    await waitFor(() => server.gate.seen[0]!.signal?.aborted === true, {
      timeoutMs: onThisMachine(10_000),
      what: 'the late task to be stopped',
    });
    server.gate.open();
    expect((await waitForTarefa(server, ids[1]!)).estado).toBe('concluida');
    expect(await loteCounts(server, lote)).toMatchObject({ total: 2, concluida: 1, falhou: 1 });
  });

  it('a worker that knows only contract 1 gives a group back, never failing it; a worker of this version then runs it', async () => {
    const server = await harness({}, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 3));
    const older = await worker(server, server.gate, { contractVersion: 1 });
    await waitFor(() => older.lines.some((line) => line.msg === 'job of a newer contract left for a newer worker'), {
      timeoutMs: onThisMachine(10_000),
      what: 'the older worker to give the group back',
    });
    expect(older.lines.find((line) => line.msg === 'job of a newer contract left for a newer worker')).toMatchObject({
      contract: GROUP_JOB_CONTRACT_VERSION,
      known: 1,
    });
    for (const id of ids) expect((await monitor(server, id)).estado).toBe('aguardando');
    expect(server.gate.seen).toEqual([]);
    await worker(server, server.gate);
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    expect(older.lines.filter((line) => line.msg === 'job done')).toEqual([]);
  });

  it('a worker stopped in the middle of a group hands it back; the next one goes on from the first unfinished task (none runs twice to its end)', async () => {
    const server = await harness({}, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 3));
    const gate = new Gate();
    gate.close();
    const first = await worker(server, gate);
    // Let the first task through, hold the second, stop the worker.
    await waitFor(() => gate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the first task to be held' });
    gate.releaseOne();
    await waitFor(async () => (await monitor(server, ids[0]!)).estado === 'concluida', {
      timeoutMs: onThisMachine(10_000),
      what: 'the first task',
    });
    await waitFor(() => gate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the second task to be held' });
    await first.running.close();
    expect(gate.seen[1]!.signal?.aborted).toBe(true);
    expect((await monitor(server, ids[1]!)).estado).toBe('aguardando');

    gate.open();
    await worker(server, gate);
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    // The first task ran once; the second twice (stopped, then run); the third once.
    expect(gate.seen.map((job) => job.area)).toEqual([ids[0], ids[1], ids[1], ids[2]]);
    expect(await loteCounts(server, lote)).toMatchObject({ total: 3, concluida: 3 });
  });

  it('a task that finished in an earlier attempt, its end not yet recorded by any API, is not run again when its group is', async () => {
    const server = await harness({}, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 2));
    const [grupo] = await groupHashes(server);
    // As an attempt that ended after the first task leaves it (the API stopped, say): its field
    // says finished, with the result that attempt recorded.
    const result = { ok: true as const, count: DIVERGENCIAS.length, bytes: 1 };
    await prelude.redis.hset(grupo!, ids[0]!, finishedItem(Date.now() - 1_000, Date.now() - 500, { result }));
    await worker(server, server.gate);
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    expect(server.gate.seen.map((job) => job.area)).toEqual([ids[1]]);
  });

  it("a task whose job keeps throwing (a bug, not a bad file): the group is tried again from it, then on its last attempt it falhou alone (500) and the group's other tasks run", async () => {
    const server = await harness({}, { noWorker: true });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 3));
    const tries: string[] = [];
    await worker(server, server.gate, {
      around: (pool) => ({
        async run(data, signal) {
          tries.push(areaOf(data.resultPath));
          if (areaOf(data.resultPath) === ids[1]) throw new Error('falha simulada');
          return pool.run(data, signal);
        },
      }),
    });
    for (const id of [ids[0]!, ids[2]!]) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    expect(await monitor(server, ids[1]!)).toMatchObject({ estado: 'falhou', erro: { status: 500, erro: httpMessages.internal } });
    // Three attempts of the group (JOB_ATTEMPTS), each from the failing task on; the first task ran once.
    expect(tries).toEqual([ids[0], ids[1], ids[1], ids[1], ids[2]]);
    expect(await loteCounts(server, lote)).toMatchObject({ total: 3, concluida: 2, falhou: 1 });
  });

  it('a group job that fails for good (its data refused by the worker): each of its tasks falhou 500 at once, told by the failure', async () => {
    // No reconcile pass within the test, and no look at a task until the batch counts them: their ends come from the failure's event.
    const server = await harness({}, { noWorker: true, intervals: { reconcileMs: 600_000 } });
    const lote = await createLote(server);
    const ids = idsOf(await send(server, lote, 2));
    // Job data comes from Redis: a group whose task list is not one fails without running any.
    const queue = new Queue(TASK_QUEUE, { connection: prelude.redis, prefix: server.config.queuePrefix });
    try {
      const [group] = await queue.getJobs(['waiting']);
      await group!.updateData({ ...(group!.data as object), tarefas: 'nenhuma' });
    } finally {
      await queue.close();
    }
    const { lines } = await worker(server, server.gate);
    await waitFor(async () => (await loteCounts(server, lote)).falhou === 2, {
      timeoutMs: onThisMachine(10_000),
      what: 'the batch to count both ends',
    });
    for (const id of ids)
      expect(await monitor(server, id)).toMatchObject({ estado: 'falhou', erro: { status: 500, erro: httpMessages.internal } });
    expect(server.gate.seen).toEqual([]);
    expect(lines.find((line) => line.msg === 'job failed')).toMatchObject({ kind: GROUP_JOB });
  });

  it("grouped tasks count one by one under MAX_QUEUED_TAREFAS, not as their group's one job", async () => {
    const server = await harness({ MAX_QUEUED_TAREFAS: '4' }, { noWorker: true });
    const lote = await createLote(server);
    expect((await send(server, lote, 4)).status).toBe(202);
    const full = await send(server, lote, 1);
    expect(full.status).toBe(503);
    expect(full.json()).toEqual({ erro: 'Serviço sobrecarregado, tente novamente em instantes.' });
  });
});
