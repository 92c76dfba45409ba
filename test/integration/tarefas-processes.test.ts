// SPEC §7.5 with the real entry points as separate processes (queue mode): a task created on one
// API is read from another, survives the restart of the API that took it (even one that went away
// before any worker ran the job), and its result is the synchronous answer's bytes.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASK_QUEUE, closeRedisClient, createRedisClient, loadConfig } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, type UploadFile } from '../helpers/http.js';
import { type ServiceProcess } from '../helpers/processes.js';
import { ROOT } from '../helpers/cluster-script.js';
import { processEnv, startApiProcess, startWorkerProcess } from '../helpers/queue-processes.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { postAsync, request, waitForTarefa } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retorno: UploadFile = { field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' };
const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'censo.txt' };

let redis: TestRedis;
let uploadDir: string;
const queuePrefix = uniqueQueuePrefix();
const running: ServiceProcess[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-tarefas-processes-'));
});
afterAll(async () => {
  for (const process of running.reverse()) await process.stop();
  await deleteKeys(redis.url, queuePrefix);
  await rm(uploadDir, { recursive: true, force: true });
  await redis?.stop();
});

const env = () => processEnv({ redisUrl: redis.url, queuePrefix, uploadDir }, { API_KEY });

async function startApi(): Promise<{ process: ServiceProcess; url: string }> {
  const api = await startApiProcess(env());
  running.push(api.process);
  return api;
}

async function startWorker(): Promise<ServiceProcess> {
  const worker = await startWorkerProcess(env());
  running.push(worker);
  return worker;
}

describe('queue mode, API and worker processes', () => {
  it('a task taken by an API that then stops, before any worker ran it, is run and answered after the restart', async () => {
    const first = await startApi();
    const accepted = await postAsync(first, '/api/retorno-rf', [retorno, txt]);
    expect(accepted.status).toBe(202);
    const id = accepted.json().id as string;
    expect((await request(first, 'GET', `/api/tarefas/${id}`)).json().estado).toBe('aguardando');
    await first.process.stop();

    await startWorker();
    const second = await startApi();
    const done = await waitForTarefa(second, id);
    expect(done.estado).toBe('concluida');
    const sync = await request(second, 'POST', '/api/retorno-rf', { body: await formWith([retorno, txt]) });
    const result = await request(second, 'GET', `/api/tarefas/${id}/resultado`);
    expect(result.status).toBe(200);
    expect(result.bytes.equals(sync.bytes)).toBe(true);
  });

  it('any API answers for any id, and a restarted API still does', async () => {
    const a = await startApi();
    const b = await startApi();
    const id = (await postAsync(a, '/api/censo-corrigido', [retorno, txt])).json().id as string;
    const fromB = await waitForTarefa(b, id);
    expect(fromB.estado).toBe('concluida');
    const sync = await request(b, 'POST', '/api/censo-corrigido', { body: await formWith([retorno, txt]) });
    const resultB = await request(b, 'GET', `/api/tarefas/${id}/resultado`);
    expect(resultB.bytes.equals(sync.bytes)).toBe(true);
    expect(resultB.headers.get('censo-pessoas-corrigidas')).toBe(sync.headers.get('censo-pessoas-corrigidas'));

    await a.process.stop();
    const again = await startApi();
    expect((await request(again, 'GET', `/api/tarefas/${id}`)).json()).toEqual(fromB);
    expect((await request(again, 'GET', `/api/tarefas/${id}/resultado`)).bytes.equals(sync.bytes)).toBe(true);
    // Deleted through one API, gone for all.
    expect((await request(b, 'DELETE', `/api/tarefas/${id}`)).status).toBe(204);
    expect((await request(again, 'GET', `/api/tarefas/${id}`)).json()).toEqual({ erro: 'Tarefa não encontrada.' });
  });

  it('a job that ended while no API ran is recorded anyway, from the job itself: the batch ends without anyone asking for the task', async () => {
    // No worker yet: the job waits while its API goes away.
    for (const process of running) await process.stop();
    const a = await startApi();
    const lote = (
      await request(a, 'POST', '/api/lotes', { body: '{"nome": "sem eventos"}', headers: { 'content-type': 'application/json' } })
    ).json().id as string;
    const sent = await request(a, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: await formWith([retorno], { referencia: 'e1' }) });
    const id = sent.json().id as string;
    expect((await request(a, 'POST', `/api/lotes/${lote}/fechar`)).json().estado).toBe('processando');
    await a.process.stop();

    // The job runs and ends with no API listening to the queue's events.
    const worker = await startWorker();
    const connection = createRedisClient(loadConfig({ REDIS_URL: redis.url }).redis!, 'worker');
    const queue = new Queue(TASK_QUEUE, { connection, prefix: queuePrefix });
    try {
      await waitFor(async () => (await queue.getJobState(id)) === 'completed', {
        timeoutMs: onThisMachine(30_000),
        what: 'the job to complete',
      });
    } finally {
      await queue.close();
      await closeRedisClient(connection);
    }
    await worker.stop();

    // A new API never saw that event: its reconciler finds the end in the job.
    const b = await startApi();
    await waitFor(async () => (await request(b, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', {
      timeoutMs: onThisMachine(30_000),
      what: 'the batch to end',
    });
    expect((await request(b, 'GET', `/api/lotes/${lote}`)).json().tarefas).toMatchObject({ total: 1, concluida: 1 });
    expect((await request(b, 'GET', `/api/tarefas/${id}`)).json().estado).toBe('concluida');
  });
});

describe('a worker that shares a group dies mid-claim (issue 55)', () => {
  it("SIGKILLed while it runs tasks claimed from another worker's group: once the claim's lease ends, the group's worker runs them; each task concluida with the same answer", async () => {
    for (const process of running) await process.stop();
    // Twelve returns of 18,000 rows in one group (TAREFAS_POR_JOB=12, under a request's 51 MB), so
    // that a claimed task is still running when its worker is killed; the lease is a job's lock,
    // here 2 s, so that the group's worker takes the claims over soon.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'censo-partilha-kill-'));
    try {
      const bench = (await import(pathToFileURL(path.join(ROOT, 'bench', 'gen-big.mjs')).href)) as {
        generate(options: { persons: number; perPerson: number; out: string; formats: string[] }): Promise<void>;
      };
      await bench.generate({ persons: 6_000, perPerson: 3, out: dir, formats: ['json'] });
      const big: UploadFile = { field: 'retorno', path: path.join(dir, 'retorno.json'), filename: 'retorno.json' };
      const prefix = uniqueQueuePrefix();
      const killEnv = processEnv(
        { redisUrl: redis.url, queuePrefix: prefix, uploadDir },
        {
          API_KEY,
          TAREFAS_POR_JOB: '12',
          WORKER_LOCK_DURATION_MS: '2000',
        },
      );
      const api = await startApiProcess(killEnv);
      running.push(api.process);
      // Two workers: the one that takes the group runs it from the front, the other, idle, is woken
      // to claim from its back.
      const workers = [await startWorkerProcess(killEnv), await startWorkerProcess(killEnv)];
      running.push(...workers);
      const workerIds = await Promise.all(workers.map(async (one) => (await one.line('worker started')).tasksWorker as string));

      const lote = (await request(api, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
        .id as string;
      const form = await formWith(Array.from({ length: 12 }, () => big));
      const sent = await request(api, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: form });
      expect(sent.status).toBe(202);
      const ids = (sent.json().tarefas as Array<{ id: string }>).map((t) => t.id);
      expect(ids).toHaveLength(12);

      const connection = createRedisClient(loadConfig({ REDIS_URL: redis.url }).redis!, 'worker');
      try {
        const fields = async () => {
          const [group] = await connection.keys(`${prefix}:${TASK_QUEUE}:grupo:*`);
          return group ? await connection.hgetall(group) : {};
        };
        let claimed: string[] = [];
        let claimerId = '';
        await waitFor(
          async () => {
            const now = Object.entries(await fields()).filter(([, v]) => v.includes('"o":') && !v.startsWith('{"f":'));
            claimed = now.map(([id]) => id);
            claimerId = now.length > 0 ? (JSON.parse(now[0]![1]) as { o: string }).o : '';
            return claimed.length > 0;
          },
          { timeoutMs: onThisMachine(30_000), intervalMs: 5, what: "a worker to claim tasks of the other one's group" },
        );
        const claimer = workers[workerIds.indexOf(claimerId)]!;
        const owner = workers.find((one) => one !== claimer)!;
        expect(claimer).toBeDefined();
        claimer.child.kill('SIGKILL');

        for (const id of ids) expect((await waitForTarefa(api, id, undefined, onThisMachine(90_000))).estado).toBe('concluida');
        const answers = await Promise.all(ids.map(async (id) => (await request(api, 'GET', `/api/tarefas/${id}/resultado`)).bytes));
        for (const answer of answers) expect(answer.equals(answers[0]!)).toBe(true);
        expect((await request(api, 'GET', `/api/lotes/${lote}`)).json().tarefas).toMatchObject({ total: 12, concluida: 12 });
        // What the dead worker had claimed and not ended was run by the group's worker.
        const ranByOwner = new Set(owner.lines.filter((line) => line.msg === 'job done').map((line) => line.tarefa));
        const endedByClaimer = new Set(claimer.lines.filter((line) => line.msg === 'job done').map((line) => line.tarefa));
        for (const id of claimed) expect(ranByOwner.has(id) || endedByClaimer.has(id), id).toBe(true);
        expect(claimed.some((id) => ranByOwner.has(id))).toBe(true);
      } finally {
        await closeRedisClient(connection);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
