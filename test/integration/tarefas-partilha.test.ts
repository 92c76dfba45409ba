// Idle workers share a running group (issue 55, task-groups.ts): a request stays one group job,
// and a worker with nothing to run claims waiting tasks from its back while the group's own worker
// runs it from the front. Each task runs once, its end is recorded and told as any group task's,
// a cancellation reaches the worker that claimed it, a claimer that closes gives its claims back,
// and a claim whose claimer is gone is run by the group's own worker once its lease ends.
// Real API, workers and job pools; each worker's pool behind a gate of its own, so that who runs
// what is decided by the test, not by this machine's speed.
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { TASK_QUEUE, claimedItem, groupKeys } from '@censo/shared';
import { useGatedWorkers } from '../helpers/gated-workers.js';
import { useQueuePrelude } from '../helpers/queue-prelude.js';
import { keysMatching } from '../helpers/redis.js';
import {
  Gate,
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

const prelude = useQueuePrelude();

const { track, worker } = useGatedWorkers();

/** An API without a worker of its own, groups of up to `size` tasks. */
async function harness(size: number): Promise<Harness> {
  const server = await startHarness('queue', { redisUrl: prelude.url, env: { TAREFAS_POR_JOB: String(size) }, noWorker: true });
  return track(server);
}

const closedGate = () => {
  const gate = new Gate();
  gate.close();
  return gate;
};

/** A new batch and `count` copies of the fixture's return sent to it in one request (one group). */
async function send(server: Harness, count: number): Promise<string[]> {
  const answer = await sendReturns(server, await createLote(server), prelude.json, count);
  expect(answer.status).toBe(202);
  return tarefaIds(answer);
}

/**
 * A group worker holding its first task behind a closed gate, then a second worker, its gate closed
 * too, holding the first task it claimed from the group's back.
 */
async function ownerAndHelperHolding(server: Harness) {
  const ownerGate = closedGate();
  const owner = await worker(server, ownerGate);
  await waitFor(() => ownerGate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the group worker to hold its first task' });
  const helperGate = closedGate();
  const helper = await worker(server, helperGate);
  await waitFor(() => helperGate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the helper to hold a claimed task' });
  return { owner, ownerGate, helper, helperGate };
}

const keysOf = (server: Harness) => groupKeys(server.config.queuePrefix, TASK_QUEUE);
const areas = (gate: Gate) => gate.seen.map((job) => job.area);
const claimedLines = (lines: ReadonlyArray<Record<string, unknown>>) =>
  lines.filter((line) => line.msg === 'job done' && line.claimed === true).map((line) => line.tarefa);

async function groupJobs(server: Harness) {
  const queue = new Queue(TASK_QUEUE, { connection: prelude.redis, prefix: server.config.queuePrefix });
  try {
    return await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized']);
  } finally {
    await queue.close();
  }
}

describe('an idle worker shares a running group', () => {
  it('claims its waiting tasks from the back, three at a time, until it meets the group worker: each task runs once, and nothing is left in Redis', async () => {
    const server = await harness(6);
    const ids = await send(server, 6);
    const ownerGate = closedGate();
    const owner = await worker(server, ownerGate);
    await waitFor(() => ownerGate.held === 1, { timeoutMs: onThisMachine(10_000), what: 'the group worker to hold its first task' });
    // The second worker starts with nothing in the queue for it: it shares the running group.
    const helperGate = new Gate();
    const helper = await worker(server, helperGate);
    for (const id of ids.slice(1)) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    // From the back, three at a time, then the two left before the group worker's first.
    expect(areas(helperGate)).toEqual([ids[5], ids[4], ids[3], ids[2], ids[1]]);
    expect(claimedLines(helper.lines)).toEqual([ids[5], ids[4], ids[3], ids[2], ids[1]]);
    expect((await monitor(server, ids[0]!)).estado).toBe('processando');

    ownerGate.open();
    expect((await waitForTarefa(server, ids[0]!)).estado).toBe('concluida');
    expect(areas(ownerGate)).toEqual([ids[0]]);
    expect(owner.lines.filter((line) => line.msg === 'job done').map((line) => line.tarefa)).toEqual([ids[0]]);
    for (const id of ids) {
      const result = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
      expect(result.status).toBe(200);
    }
    await waitFor(async () => (await groupJobs(server)).length === 0, { timeoutMs: onThisMachine(5_000), what: 'the group job to end' });
    const keys = keysOf(server);
    await waitFor(async () => (await keysMatching(prelude.redis, `${server.config.queuePrefix}:${TASK_QUEUE}:grupo:*`)).length === 0, {
      timeoutMs: onThisMachine(5_000),
      what: 'the group to be forgotten',
    });
    expect(await keysMatching(prelude.redis, `${server.config.queuePrefix}:${TASK_QUEUE}:partilha:*`)).toEqual([]);
    expect(await prelude.redis.zcard(keys.open)).toBe(0);
    expect(await prelude.redis.get(keys.waiting)).toBe('0');
  });

  it('DELETE of a claimed task stops it on the worker that claimed it, and the rest of the group runs', async () => {
    const server = await harness(3);
    const ids = await send(server, 3);
    const { ownerGate, helper, helperGate } = await ownerAndHelperHolding(server);
    expect(areas(helperGate)).toEqual([ids[2]]);
    expect((await monitor(server, ids[2]!)).estado).toBe('processando');

    expect((await request(server, 'DELETE', `/api/tarefas/${ids[2]}`)).status).toBe(204);
    await waitFor(() => helperGate.seen[0]!.signal?.aborted === true, {
      timeoutMs: onThisMachine(10_000),
      what: 'the claimed task to stop',
    });
    expect(helper.lines.filter((line) => line.msg === 'group task cancelled').map((line) => line.tarefa)).toEqual([ids[2]]);
    ownerGate.open();
    helperGate.open();
    for (const id of [ids[0]!, ids[1]!]) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    expect((await request(server, 'GET', `/api/tarefas/${ids[2]}`)).status).toBe(404);
    // The helper had claimed the second task with the third: it ran it after the stop.
    expect(areas(helperGate)).toEqual([ids[2], ids[1]]);
    expect(areas(ownerGate)).toEqual([ids[0]]);
  });

  it('a worker that closes gives its claims back: the group worker runs them, each once to its end', async () => {
    const server = await harness(3);
    const ids = await send(server, 3);
    const { ownerGate, helper, helperGate } = await ownerAndHelperHolding(server);
    await helper.running.close();
    expect(helperGate.seen[0]!.signal?.aborted).toBe(true);
    expect((await monitor(server, ids[2]!)).estado).toBe('aguardando');
    expect((await monitor(server, ids[1]!)).estado).toBe('aguardando');

    ownerGate.open();
    for (const id of ids) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    expect(areas(ownerGate)).toEqual([ids[0], ids[1], ids[2]]);
    expect(claimedLines(helper.lines)).toEqual([]);
  });

  it("the group's job waits for a claim, and runs the task itself once the claim's lease ends without an end (its claimer died)", async () => {
    const server = await harness(3);
    const ids = await send(server, 3);
    const keys = keysOf(server);
    const [groupKey] = await keysMatching(prelude.redis, `${server.config.queuePrefix}:${TASK_QUEUE}:grupo:*`);
    // A worker that claimed the last task and died: its claim lasts 1.5 s more, renewed by nobody.
    const leaseEnds = Date.now() + 1_500;
    await prelude.redis
      .multi()
      .hset(groupKey!, ids[2]!, claimedItem(Date.now(), 'morto', leaseEnds))
      .decr(keys.waiting)
      .exec();

    const gate = new Gate();
    const owner = await worker(server, gate);
    for (const id of [ids[0]!, ids[1]!]) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    if (Date.now() < leaseEnds - 300) {
      // Its own tasks done, the group's job stays while the claim holds.
      expect((await groupJobs(server)).map((job) => job.id)).toHaveLength(1);
      expect(areas(gate)).toEqual([ids[0], ids[1]]);
    }
    expect((await waitForTarefa(server, ids[2]!)).estado).toBe('concluida');
    expect(areas(gate)).toEqual([ids[0], ids[1], ids[2]]);
    const ran = owner.lines.find((line) => line.msg === 'job done' && line.tarefa === ids[2]);
    expect(ran?.time as number).toBeGreaterThanOrEqual(leaseEnds);
    await waitFor(async () => (await groupJobs(server)).length === 0, { timeoutMs: onThisMachine(5_000), what: 'the group job to end' });
  });
});
