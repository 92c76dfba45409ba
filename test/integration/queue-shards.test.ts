// QUEUE_SHARDS (issue 55, SPEC §12): the jobs spread over several copies of the queue, each under
// a prefix of its own (shards.ts). Here on one Redis, the real API, worker and job pool: a job
// lies on the shard of its key and nowhere else, a request's jobs all on one shard, one worker
// takes from every shard, every task and request gets its own answer, and tasks queued before the
// number of shards changed are still found, run and recorded, and their jobs still go. (Shards on a Redis Cluster's masters, one of
// them failing over under load: redis-cluster.test.ts.)
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { GROUP_ID_PREFIX, JOB_QUEUE, TASK_QUEUE, createJobPool, loadConfig, shardOf, shardPrefixes } from '@censo/shared';
import { startWorker } from '@censo/worker';
import { pino } from 'pino';
import { uniqueQueuePrefix } from '../helpers/redis.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { useGatedWorkers } from '../helpers/gated-workers.js';
import { useQueuePrelude } from '../helpers/queue-prelude.js';
import { keysMatching } from '../helpers/redis.js';
import { createLote, request, sendReturns, startHarness, tarefaIds, waitForTarefa, type Harness } from '../helpers/tarefas.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;

const prelude = useQueuePrelude();
const { track } = useGatedWorkers();

/** The jobs on one shard's queue in the given states, by id. */
async function jobIds(prefix: string, name: string, states: Parameters<Queue['getJobs']>[0]): Promise<string[]> {
  const queue = new Queue(name, { connection: prelude.redis, prefix });
  try {
    return (await queue.getJobs(states)).map((job) => job.id!);
  } finally {
    await queue.close();
  }
}

const PENDING = ['waiting', 'active', 'delayed', 'prioritized'] as const;

async function expectResults(server: Harness, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    expect((await waitForTarefa(server, id, undefined, onThisMachine(30_000))).estado).toBe('concluida');
    expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).json()).toEqual(basico.expectedDivergencias);
  }
}

describe('QUEUE_SHARDS=2 on one Redis', () => {
  it("a batch's group jobs lie each on its key's shard, one worker runs both shards' and every task gets its own result", async () => {
    const server = track(await startHarness('queue', { redisUrl: prelude.url, env: { QUEUE_SHARDS: '2', TAREFAS_POR_JOB: '2' } }));
    const prefixes = shardPrefixes(server.config.queuePrefix, 2);
    server.gate.close();
    const lote = await createLote(server);
    const ids: string[] = [];
    const groups = new Set<string>();
    const onShard = [new Set<string>(), new Set<string>()];
    // A group's id is random: requests of one group each until both shards hold one (2^-19 that 20 do not).
    for (let i = 0; i < 20 && (onShard[0]!.size === 0 || onShard[1]!.size === 0); i++) {
      const sent = await sendReturns(server, lote, prelude.json, 2);
      expect(sent.status).toBe(202);
      ids.push(...tarefaIds(sent));
      // The group is queued before the answer: each shard's pending jobs, read now.
      for (const [shard, prefix] of prefixes.entries()) {
        for (const id of await jobIds(prefix, TASK_QUEUE, [...PENDING])) {
          onShard[shard]!.add(id);
          groups.add(id);
        }
      }
    }
    expect(onShard[0]!.size).toBeGreaterThan(0);
    expect(onShard[1]!.size).toBeGreaterThan(0);
    expect(groups.size).toBe(ids.length / 2);
    for (const [shard, jobs] of onShard.entries()) {
      for (const id of jobs) {
        expect(id.startsWith(GROUP_ID_PREFIX)).toBe(true);
        expect(shardOf(id, 2)).toBe(shard);
      }
    }
    // The worker holds a task of each shard (one slot a shard, the pool behind the gate).
    await expect.poll(() => server.gate.held, { timeout: onThisMachine(10_000) }).toBeGreaterThanOrEqual(2);
    server.gate.open();
    await expectResults(server, ids);
    // Recorded: the groups' hashes are gone from both shards.
    for (const prefix of prefixes) {
      await expect
        .poll(() => keysMatching(prelude.redis, `${prefix}:${TASK_QUEUE}:grupo:*`), { timeout: onThisMachine(10_000) })
        .toEqual([]);
    }
  });

  it("a request's jobs all lie on one shard (its groups and the task left alone), so it is queued all or none by one call; requests spread over both", async () => {
    const server = track(await startHarness('queue', { redisUrl: prelude.url, env: { QUEUE_SHARDS: '2', TAREFAS_POR_JOB: '3' } }));
    const prefixes = shardPrefixes(server.config.queuePrefix, 2);
    server.gate.close();
    const lote = await createLote(server);
    const ids: string[] = [];
    const seen = new Set<string>();
    const shardsOfRequests: number[] = [];
    // 7 files: groups of 3, 3 and a task alone, each routed by its own id. Requests until both
    // shards hold one (2^-19 that 20 do not).
    for (let i = 0; i < 20 && new Set(shardsOfRequests).size < 2; i++) {
      const sent = await sendReturns(server, lote, prelude.json, 7);
      expect(sent.status).toBe(202);
      const tarefas = tarefaIds(sent);
      ids.push(...tarefas);
      // This request's jobs: those queued since the last look (the gate holds what runs; it stays pending).
      const jobs: Array<{ id: string; shard: number }> = [];
      for (const [shard, prefix] of prefixes.entries()) {
        for (const id of await jobIds(prefix, TASK_QUEUE, [...PENDING])) {
          if (seen.has(id)) continue;
          seen.add(id);
          jobs.push({ id, shard });
        }
      }
      expect(jobs.filter((job) => job.id.startsWith(GROUP_ID_PREFIX))).toHaveLength(2);
      expect(jobs.filter((job) => job.id === tarefas[6])).toHaveLength(1);
      expect(jobs).toHaveLength(3);
      expect(new Set(jobs.map((job) => job.shard)).size).toBe(1);
      for (const job of jobs) expect(shardOf(job.id, 2)).toBe(job.shard);
      shardsOfRequests.push(jobs[0]!.shard);
    }
    expect(new Set(shardsOfRequests)).toEqual(new Set([0, 1]));
    server.gate.open();
    await expectResults(server, ids);
  });

  it('synchronous requests: each job on one shard drawn per request, both shards used, each answer byte for byte the embedded one', async () => {
    const server = track(await startHarness('queue', { redisUrl: prelude.url, env: { QUEUE_SHARDS: '2' } }));
    const prefixes = shardPrefixes(server.config.queuePrefix, 2);
    const json = prelude.json;
    // 24 requests: each shard drawn by some (chance of one missed 2·2^-24).
    const answers = await Promise.all(
      Array.from({ length: 24 }, async () => {
        const form = new FormData();
        form.append('retorno', new Blob([json]), 'retorno.json');
        return request(server, 'POST', '/api/divergencias-rf', { body: form });
      }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.json()).toEqual(basico.expectedDivergencias);
    }
    const completed = await Promise.all(prefixes.map((prefix) => jobIds(prefix, JOB_QUEUE, ['completed'])));
    expect(new Set(completed.flat()).size).toBe(24);
    expect(completed.map((jobs) => jobs.length > 0)).toEqual([true, true]);
    // Neither shard refused: /metrics has a count of rests for each, at 0.
    const metrics = (await request(server, 'GET', '/metrics')).bytes.toString('utf8');
    expect(metrics.split('\n').filter((line) => line.startsWith('censo_queue_shard_rests_total'))).toEqual([
      'censo_queue_shard_rests_total{shard="0"} 0',
      'censo_queue_shard_rests_total{shard="1"} 0',
    ]);
  });

  it('tasks queued with one shard, then the API restarted with two: found on shard 0, run, recorded, and their jobs gone', async () => {
    // One job a task, so each task is routed by its own id: about half of them now belong to shard 1.
    const env = { TAREFAS_POR_JOB: '1' };
    const before = track(await startHarness('queue', { redisUrl: prelude.url, env, noWorker: true }));
    const lote = await createLote(before);
    // A task's id is random: requests of 8 until one belongs to shard 1 (all 8 on shard 0 is 1 in
    // 256, which a CI run met; 10 requests all on shard 0 is 2^-80).
    const ids: string[] = [];
    for (let i = 0; i < 10 && !ids.some((id) => shardOf(id, 2) === 1); i++) {
      const sent = await sendReturns(before, lote, prelude.json, 8);
      expect(sent.status).toBe(202);
      ids.push(...tarefaIds(sent));
    }
    expect(ids.some((id) => shardOf(id, 2) === 1)).toBe(true);
    await before.stop();

    const after = track(
      await startHarness('queue', {
        redisUrl: prelude.url,
        env: { ...env, QUEUE_SHARDS: '2' },
        queuePrefix: before.config.queuePrefix,
        uploadDir: before.uploadDir,
      }),
    );
    await expectResults(after, ids);
    const [zero, one] = shardPrefixes(before.config.queuePrefix, 2);
    // Forgotten where they were: no task's job is left on shard 0 (one finished job stays until its record takes it).
    await expect
      .poll(async () => (await jobIds(zero!, TASK_QUEUE, ['completed', 'failed', ...PENDING])).filter((id) => ids.includes(id)), {
        timeout: onThisMachine(10_000),
      })
      .toEqual([]);
    expect(await jobIds(one!, TASK_QUEUE, ['completed', 'failed', ...PENDING])).toEqual([]);
  });

  it('workers started with fewer shards than the API: the API says which shard no worker takes from, and only that one', async () => {
    const queuePrefix = uniqueQueuePrefix();
    const lines: Array<Record<string, unknown>> = [];
    const pool = createJobPool({ threads: 1, maxQueue: 16 });
    const older = await startWorker(
      loadConfig({ REDIS_URL: prelude.url, QUEUE_PREFIX: queuePrefix, LOG_LEVEL: 'silent' }),
      pino({ level: 'silent' }),
      {
        executor: pool,
        drainMs: 300,
      },
    );
    try {
      await older.waitUntilReady();
      const server = track(
        await startHarness('queue', { redisUrl: prelude.url, queuePrefix, noWorker: true, env: { QUEUE_SHARDS: '2' }, logLines: lines }),
      );
      expect(server.config.queueShards).toBe(2);
      await expect
        .poll(() => lines.filter((line) => String(line.msg).startsWith('no worker takes from this shard')).map((line) => line.shard), {
          timeout: onThisMachine(10_000),
        })
        .toEqual([1]);
    } finally {
      await older.close();
      await pool.close();
    }
  });

  it('a worker of two threads with both shards busy runs two tasks, not two a shard: the others stay aguardando, then all concluida', async () => {
    const server = track(await startHarness('queue', { redisUrl: prelude.url, env: { QUEUE_SHARDS: '2', TAREFAS_POR_JOB: '1' } }));
    expect(server.config.workerConcurrency).toBe(2);
    server.gate.close();
    const lote = await createLote(server);
    const ids: string[] = [];
    // A request's tasks share a shard drawn at random: requests of 4 until each shard has some (2^-19 that 20 do not).
    for (let i = 0; i < 20 && [0, 1].some((shard) => ids.filter((id) => shardOf(id, 2) === shard).length < 2); i++) {
      const sent = await sendReturns(server, lote, prelude.json, 4);
      expect(sent.status).toBe(202);
      ids.push(...tarefaIds(sent));
    }
    await expect.poll(() => server.gate.held, { timeout: onThisMachine(10_000) }).toBe(2);
    // A few of the shards' hand-back pauses (1 s each): still two, and the monitors say so.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(server.gate.held).toBe(2);
    const estados = await Promise.all(ids.map(async (id) => (await request(server, 'GET', `/api/tarefas/${id}`)).json().estado));
    expect(estados.filter((estado) => estado === 'processando')).toHaveLength(2);
    expect(estados.filter((estado) => estado === 'aguardando')).toHaveLength(ids.length - 2);
    server.gate.open();
    await expectResults(server, ids);
  });
});
