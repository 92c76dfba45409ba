// The API's front over the shards' task executions (services/api/src/jobs/sharded.ts): each call
// reaches the shard of each task's key, a request's ids all route to one shard, tasks spread over
// shards are queued all or none, and a task queued before QUEUE_SHARDS changed is found where it is
// and forgotten there. New requests pass over a shard that refused work lately (shard-choice.ts).
import { describe, expect, it } from 'vitest';
import { createLogger, GROUP_ID_PREFIX, QueueUnavailableError, shardOf, type JobData, type JobResult } from '@censo/shared';
import type { BullmqRunner } from '../../services/api/dist/jobs/bullmq.js';
import { SHARD_REST_MS, shardChoice } from '../../services/api/dist/jobs/shard-choice.js';
import { shardedRunner, shardedTasks } from '../../services/api/dist/jobs/sharded.js';
import { createMetrics } from '../../services/api/dist/plugins/metrics.js';
import { logLines } from '../helpers/log-lines.js';
import {
  freshIds,
  type JobObservation,
  type QueuedTask,
  type TaskExecution,
  type TaskRef,
} from '../../services/api/dist/tarefas/execution.js';

/** A shard's execution that keeps its jobs in a map and says what it was asked. */
function fakeShard(options: { refuses?: boolean; groupSize?: number } = {}) {
  const jobs = new Map<string, JobObservation>();
  const calls: string[] = [];
  const execution: TaskExecution = {
    mode: 'bullmq',
    async groupSize() {
      calls.push('groupSize');
      return options.groupSize ?? 50;
    },
    idSource: () => freshIds,
    async submit(tasks) {
      calls.push(`submit ${tasks.map((t) => t.id).join(',')}`);
      if (options.refuses) throw new Error('Redis away');
      for (const task of tasks) jobs.set(task.id, { state: 'waiting' });
    },
    async inspect(task) {
      calls.push(`inspect ${task.id}`);
      return jobs.get(task.id) ?? { state: 'missing' };
    },
    async inspectAll(tasks) {
      return Promise.all(tasks.map((task) => execution.inspect(task)));
    },
    async cancel(task) {
      calls.push(`cancel ${task.id}`);
      jobs.delete(task.id);
    },
    async forget(tasks) {
      calls.push(`forget ${tasks.map((t) => t.id).join(',')}`);
      for (const task of tasks) jobs.delete(task.id);
    },
    waiting: async () => jobs.size,
    running: async () => new Map(),
    onSettled: () => undefined,
    close: async () => undefined,
  };
  return { execution, jobs, calls };
}

const data = { kind: 'divergencias' } as unknown as JobData;
/** Ids whose shard among 2 is `shard`: the first `count` of a fixed series. */
const idsOn = (shard: number, count: number): string[] => {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) if (shardOf(`tarefa-${i}`, 2) === shard) out.push(`tarefa-${i}`);
  return out;
};
const task = (id: string): QueuedTask => ({ id, data });
/** A version 4 UUID, as newId makes them. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('shardedTasks', () => {
  it("queues each task on its key's shard (a group's id when it has one), and inspects it there", async () => {
    const shards = [fakeShard(), fakeShard()];
    const front = shardedTasks(shards.map((s) => s.execution));
    const [a] = idsOn(0, 1);
    const [b] = idsOn(1, 1);
    const grouped: QueuedTask = { id: 'x', grupo: b!, data };
    await front.submit([task(a!), grouped]);
    expect([...shards[0]!.jobs.keys()]).toEqual([a]);
    expect([...shards[1]!.jobs.keys()]).toEqual(['x']);
    expect(await front.inspectAll([{ id: a! }, { id: 'x', grupo: b! }])).toEqual([{ state: 'waiting' }, { state: 'waiting' }]);
    expect(await front.waiting()).toBe(2);
  });

  it("a request's ids (its tasks' and its groups') all route to one shard, drawn at random per request; fresh UUIDs behind the prefix", async () => {
    for (const count of [2, 3, 8]) {
      const front = shardedTasks(Array.from({ length: count }, () => fakeShard().execution));
      const used = new Set<number>();
      const all = new Set<string>();
      // 200 requests: 8 shards each drawn by some (chance of one missed below 8·(7/8)^200 ≈ 2·10^-11).
      for (let request = 0; request < 200; request++) {
        const ids = front.idSource();
        const made = [ids(), ids(), ids(GROUP_ID_PREFIX), ids(GROUP_ID_PREFIX), ids()];
        const shards = new Set(made.map((id) => shardOf(id, count)));
        expect(shards.size).toBe(1);
        used.add([...shards][0]!);
        expect(made.slice(2, 4).every((id) => id.startsWith(GROUP_ID_PREFIX) && UUID.test(id.slice(GROUP_ID_PREFIX.length)))).toBe(true);
        expect([...made.slice(0, 2), made[4]!].every((id) => UUID.test(id))).toBe(true);
        for (const id of made) all.add(id);
      }
      expect(used.size).toBe(count);
      expect(all.size).toBe(200 * 5);
    }
  });

  it('a request is queued all or none: the part a shard took is cancelled when the other refuses, and the request gets QueueUnavailableError', async () => {
    const shards = [fakeShard(), fakeShard({ refuses: true })];
    const front = shardedTasks(shards.map((s) => s.execution));
    const zero = idsOn(0, 2);
    const one = idsOn(1, 1);
    await expect(front.submit([...zero, ...one].map(task))).rejects.toBeInstanceOf(QueueUnavailableError);
    expect(shards[0]!.jobs.size).toBe(0);
    expect(shards[0]!.calls.filter((c) => c.startsWith('cancel'))).toEqual(zero.map((id) => `cancel ${id}`));
  });

  it('a task on another shard than its key says (queued before QUEUE_SHARDS changed) is found there, and forgotten there', async () => {
    const shards = [fakeShard(), fakeShard()];
    const front = shardedTasks(shards.map((s) => s.execution));
    const [stray] = idsOn(1, 1);
    shards[0]!.jobs.set(stray!, { state: 'active', startedAt: 1 });
    const ref: TaskRef = { id: stray! };
    expect(await front.inspect(ref)).toEqual({ state: 'active', startedAt: 1 });
    // Remembered: the next look goes straight to shard 0.
    shards[1]!.calls.length = 0;
    expect(await front.inspect(ref)).toEqual({ state: 'active', startedAt: 1 });
    expect(shards[1]!.calls).toEqual([]);
    await front.forget([ref]);
    expect(shards[0]!.calls.at(-1)).toBe(`forget ${stray}`);
    expect(shards[0]!.jobs.size).toBe(0);
    // Gone everywhere: missing.
    expect(await front.inspect(ref)).toEqual({ state: 'missing' });
  });
});

/** A clock the test moves. */
function clock(start = 1_000_000) {
  let at = start;
  return { now: () => at, pass: (ms: number) => (at += ms) };
}
/** The shards `pick` returns in `times` draws. */
const picked = (pick: () => number, times = 200) => new Set(Array.from({ length: times }, pick));

describe('the shard a new request goes to', () => {
  it('any shard at random; one that refused rests SHARD_REST_MS (5 s) while another is open, then is drawn again', () => {
    const time = clock();
    const choice = shardChoice(3, undefined, time.now);
    // 200 draws over 3 shards: each drawn (chance of one missed below 3·(2/3)^200 ≈ 10^-35).
    expect(picked(choice.pick)).toEqual(new Set([0, 1, 2]));
    choice.refused(1);
    expect(picked(choice.pick)).toEqual(new Set([0, 2]));
    time.pass(SHARD_REST_MS - 1);
    expect(picked(choice.pick)).toEqual(new Set([0, 2]));
    // A refusal during the rest starts it again from then.
    choice.refused(1);
    time.pass(SHARD_REST_MS - 1);
    expect(picked(choice.pick)).toEqual(new Set([0, 2]));
    time.pass(1);
    expect(picked(choice.pick)).toEqual(new Set([0, 1, 2]));
    expect(SHARD_REST_MS).toBe(5_000);
  });

  it('every shard resting: any of them, as if none were (the request gets its 503 from the shard itself)', () => {
    const time = clock();
    const choice = shardChoice(2, undefined, time.now);
    choice.refused(0);
    expect(picked(choice.pick)).toEqual(new Set([1]));
    choice.refused(1);
    expect(picked(choice.pick)).toEqual(new Set([0, 1]));
  });

  it('the log says a rest once, with its shard, not once a refused request; /metrics counts the rests by shard', async () => {
    const time = clock();
    const { lines, sink } = logLines<{ msg: string; shard: number; restMs: number }>();
    const choice = shardChoice(2, createLogger({ logLevel: 'info' }, {}, sink), time.now);
    choice.refused(1);
    choice.refused(1);
    time.pass(1000);
    choice.refused(1);
    time.pass(SHARD_REST_MS);
    choice.refused(1);
    expect(lines.map(({ msg, shard, restMs }) => ({ msg, shard, restMs }))).toEqual(
      Array.from({ length: 2 }, () => ({
        msg: 'shard refused work: new requests go to the other shards meanwhile',
        shard: 1,
        restMs: 5_000,
      })),
    );
    expect(choice.rests()).toEqual([0, 2]);
    const scrape = async (runner: Parameters<typeof createMetrics>[0]) =>
      (await createMetrics(runner, createLogger({ logLevel: 'silent' }, {})).metrics.registry.metrics())
        .split('\n')
        .filter((line) => line.startsWith('censo_queue_shard_rests_total'));
    expect(await scrape({ shardRests: () => choice.rests() })).toEqual([
      'censo_queue_shard_rests_total{shard="0"} 0',
      'censo_queue_shard_rests_total{shard="1"} 2',
    ]);
    // One queue (or none): no such series.
    expect(await scrape({})).toEqual([]);
  });

  it("a shard that refused a request's tasks: the next requests' ids all route to the other shard, until its rest ends", async () => {
    const time = clock();
    const shards = [fakeShard(), fakeShard({ refuses: true })];
    const front = shardedTasks(
      shards.map((s) => s.execution),
      shardChoice(2, undefined, time.now),
    );
    await expect(front.submit(idsOn(1, 2).map(task))).rejects.toBeInstanceOf(QueueUnavailableError);
    expect(picked(() => shardOf(front.idSource()(), 2))).toEqual(new Set([0]));
    time.pass(SHARD_REST_MS);
    expect(picked(() => shardOf(front.idSource()(), 2))).toEqual(new Set([0, 1]));
  });

  it("a resting shard is not asked how many tasks a group job may carry (its look at its workers would wait on its master): the open shards' answer", async () => {
    const time = clock();
    const shards = [fakeShard({ groupSize: 50 }), fakeShard({ groupSize: 1, refuses: true })];
    const front = shardedTasks(
      shards.map((s) => s.execution),
      shardChoice(2, undefined, time.now),
    );
    expect(await front.groupSize()).toBe(1);
    await expect(front.submit(idsOn(1, 1).map(task))).rejects.toBeInstanceOf(QueueUnavailableError);
    shards[1]!.calls.length = 0;
    expect(await front.groupSize()).toBe(50);
    expect(shards[1]!.calls).toEqual([]);
    time.pass(SHARD_REST_MS);
    expect(await front.groupSize()).toBe(1);
  });

  it('a synchronous request goes to a drawn shard; a shard that answered QueueUnavailableError gets none while it rests, and other errors rest nothing', async () => {
    const time = clock();
    const ran: number[] = [];
    let failure: Error | null = null;
    const runner = (shard: number) =>
      ({
        mode: 'bullmq',
        pendingCount: () => 0,
        redis: null,
        tasks: fakeShard().execution,
        async run(): Promise<JobResult> {
          ran.push(shard);
          if (shard === 1 && failure) throw failure;
          return { ok: true, count: shard, bytes: 0 };
        },
        isReady: async () => true,
        close: async () => undefined,
      }) as unknown as BullmqRunner;
    const front = shardedRunner([runner(0), runner(1)], shardChoice(2, undefined, time.now));
    const options = { signal: new AbortController().signal, id: 'pedido', deadline: Number.MAX_SAFE_INTEGER };
    const runs = async (times: number) => {
      ran.length = 0;
      await Promise.all(Array.from({ length: times }, () => front.run(data, options).catch(() => null)));
      return new Set(ran);
    };
    expect(await runs(200)).toEqual(new Set([0, 1]));
    // A job that failed for its own reasons says nothing of its shard.
    failure = new Error('the job crashed');
    await runs(200);
    expect(await runs(200)).toEqual(new Set([0, 1]));
    failure = new QueueUnavailableError();
    ran.length = 0;
    for (let i = 0; i < 200 && !ran.includes(1); i++) await runs(1);
    expect(ran).toEqual([1]);
    expect(await runs(200)).toEqual(new Set([0]));
    time.pass(SHARD_REST_MS);
    failure = null;
    expect(await runs(200)).toEqual(new Set([0, 1]));
  });
});
