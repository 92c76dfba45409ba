// The sharing scripts' rules, read off Redis directly (task-groups.ts, issue 55): what a claim
// takes, what it passes over, when it closes a group, what an owner's open writes and whom it
// wakes, and what a renewal or a release changes. The workers' behaviour on top of them is
// tarefas-partilha's; here each rule is one small case on a Redis of the test's own keys.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HELP_MESSAGE,
  TASK_QUEUE,
  WAITING_ITEM,
  cancelChannel,
  claimMark,
  claimedItem,
  finishedItem,
  groupKeys,
  groupScripts,
  parseItem,
  startedItem,
} from '@censo/shared';
import { deleteKeys, uniqueQueuePrefix, useTestRedis } from '../helpers/redis.js';

const server = useTestRedis();
const prefix = uniqueQueuePrefix();
const keys = groupKeys(prefix, TASK_QUEUE);
let redis: Redis;
beforeAll(() => {
  redis = new Redis(server.url);
});
afterAll(async () => {
  await redis.quit();
  await deleteKeys(server.url, prefix);
});

const scripts = () => groupScripts(redis);
let n = 0;

/** A group of `ids` with the given fields (waiting by default), open, its job present and, unless `running: false`, locked. */
async function group(ids: string[], fields: Record<string, string> = {}, { running = true, job = true } = {}) {
  const id = `g-${++n}`;
  await redis.hset(keys.group(id), ...ids.flatMap((task) => [task, fields[task] ?? WAITING_ITEM]));
  await redis.hset(keys.share(id), 'ids', ids.join(','));
  await redis.zadd(keys.open, n, id);
  if (job) await redis.hset(`${prefix}:${TASK_QUEUE}:${id}`, 'data', '{}');
  if (running) await redis.set(`${prefix}:${TASK_QUEUE}:${id}:lock`, 'owner:1');
  await redis.incrby(keys.waiting, ids.filter((task) => (fields[task] ?? WAITING_ITEM) === WAITING_ITEM).length);
  return id;
}

const claim = (worker = 'w1', chunk = 3) => {
  const now = Date.now();
  return scripts().censoClaim(
    keys.open,
    keys.waiting,
    keys.idle,
    keys.keyPrefix,
    claimedItem(now, worker, now + 30_000),
    chunk,
    worker,
    now,
  );
};
const field = async (id: string, task: string) => {
  const raw = await redis.hget(keys.group(id), task);
  return raw === null ? null : parseItem(raw);
};

describe('the sharing scripts (task-groups.ts)', () => {
  it('a claim takes up to three waiting tasks from the back, then the next three, and closes the group where it meets the owner', async () => {
    await redis.del(keys.open, keys.waiting);
    const id = await group(['a', 'b', 'c', 'd', 'e', 'f', 'g'], { a: startedItem(Date.now()) });
    expect(await claim()).toEqual([id, 'g', 'f', 'e']);
    expect(await field(id, 'g')).toMatchObject({ state: 'started', claim: { worker: 'w1' } });
    expect(await redis.get(keys.waiting)).toBe('3');
    expect(await claim('w2')).toEqual([id, 'd', 'c', 'b']);
    expect(await field(id, 'b')).toMatchObject({ state: 'started', claim: { worker: 'w2' } });
    // Next: 'a' is the owner's; the group is closed, its share and its place gone; nothing else to claim.
    expect(await claim('w3')).toEqual([]);
    expect(await redis.zscore(keys.open, id)).toBeNull();
    expect(await redis.exists(keys.share(id))).toBe(0);
    // A look that found nothing puts its worker among the idle ones.
    expect(await redis.zscore(keys.idle, 'w3')).not.toBeNull();
    expect(await redis.get(keys.waiting)).toBe('0');
  });

  it('passes over a task gone (cancelled) and stops at a finished one', async () => {
    await redis.del(keys.open);
    const done = finishedItem(1, 2, { why: 'cancelado' });
    const id = await group(['a', 'b', 'c', 'd', 'e'], { b: done });
    await redis.hdel(keys.group(id), 'e');
    expect(await claim()).toEqual([id, 'd', 'c']);
    expect(await redis.zscore(keys.open, id)).not.toBeNull();
    // Next from the back is 'b', finished: the ends have met, 'a' is left to the owner.
    expect(await claim()).toEqual([]);
    expect(await redis.zscore(keys.open, id)).toBeNull();
    expect(await field(id, 'a')).toEqual({ state: 'waiting' });
  });

  it('shares only a running group: a waiting one stays open for later, one whose job is gone is closed', async () => {
    await redis.del(keys.open);
    const waiting = await group(['a', 'b'], {}, { running: false });
    const gone = await group(['a', 'b'], {}, { running: false, job: false });
    expect(await claim()).toEqual([]);
    expect(await redis.zscore(keys.open, waiting)).not.toBeNull();
    expect(await redis.zscore(keys.open, gone)).toBeNull();
    expect(await field(waiting, 'b')).toEqual({ state: 'waiting' });
    // Once its job is locked (a worker took it), it is shared.
    await redis.set(`${prefix}:${TASK_QUEUE}:${waiting}:lock`, 'owner:1');
    expect(await claim()).toEqual([waiting, 'b', 'a']);
  });

  it("the owner's open writes the order, opens the group and wakes idle workers on their own channels, never itself", async () => {
    await redis.del(keys.open, keys.idle);
    await redis.zadd(keys.idle, 1, 'owner', 2, 'idle-1', 3, 'idle-2', 4, 'idle-3');
    const subscriber = new Redis(server.url);
    const heard: [string, string][] = [];
    const channels = ['owner', 'idle-1', 'idle-2', 'idle-3'].map((w) => cancelChannel(prefix, TASK_QUEUE, w));
    await subscriber.subscribe(...channels);
    subscriber.on('message', (channel: string, message: string) => heard.push([channel, message]));
    try {
      const woken = await scripts().censoOpen(
        keys.share('g-open'),
        keys.open,
        keys.idle,
        'a,b,c,d,e,f',
        60_000,
        'g-open',
        Date.now(),
        cancelChannel(prefix, TASK_QUEUE, ''),
        'owner',
        2,
      );
      expect(woken).toBe(2);
      expect(await redis.hget(keys.share('g-open'), 'ids')).toBe('a,b,c,d,e,f');
      expect(await redis.pttl(keys.share('g-open'))).toBeGreaterThan(0);
      expect(await redis.zscore(keys.open, 'g-open')).not.toBeNull();
      // The longest idle first; the owner left the idle set without a message; one idle worker left.
      await expect.poll(() => heard.length).toBe(2);
      expect(heard).toEqual([
        [cancelChannel(prefix, TASK_QUEUE, 'idle-1'), HELP_MESSAGE],
        [cancelChannel(prefix, TASK_QUEUE, 'idle-2'), HELP_MESSAGE],
      ]);
      expect(await redis.zrange(keys.idle, 0, -1)).toEqual(['idle-3']);
      // A popped worker nobody listens for (gone) wakes the next one instead.
      await redis.zadd(keys.idle, 1, 'gone');
      expect(
        await scripts().censoOpen(
          keys.share('g-2'),
          keys.open,
          keys.idle,
          'a,b',
          60_000,
          'g-2',
          Date.now(),
          cancelChannel(prefix, TASK_QUEUE, ''),
          '',
          1,
        ),
      ).toBe(1);
      expect(await redis.zrange(keys.idle, 0, -1)).toEqual([]);
    } finally {
      await subscriber.quit();
    }
  });

  it("a renewal writes only this worker's unfinished claims; a release makes them waiting again and counts them", async () => {
    await redis.del(keys.open, keys.waiting);
    const now = Date.now();
    const id = await group(['a', 'b', 'c'], {
      a: claimedItem(now, 'w1', now + 100),
      b: claimedItem(now, 'w2', now + 100),
      c: finishedItem(now, now, { why: 'erro' }),
    });
    const renewed = claimedItem(now, 'w1', now + 60_000);
    expect(
      await scripts().censoRenew(keys.group(id), keys.waiting, claimMark('w1'), '0', 'a', renewed, 'b', renewed, 'c', renewed),
    ).toEqual([1, 0, 0]);
    expect(await field(id, 'a')).toMatchObject({ claim: { worker: 'w1', until: now + 60_000 } });
    expect(await field(id, 'b')).toMatchObject({ claim: { worker: 'w2', until: now + 100 } });
    expect(await field(id, 'c')).toMatchObject({ state: 'stopped' });
    expect(await scripts().censoRenew(keys.group(id), keys.waiting, claimMark('w1'), '1', 'a', WAITING_ITEM)).toEqual([1]);
    expect(await field(id, 'a')).toEqual({ state: 'waiting' });
    expect(await redis.get(keys.waiting)).toBe('1');
  });

  it("the owner's step: a live claim is left to its claimer (2), one whose lease ran out is taken over (1), a waiting one is run (1)", async () => {
    const now = Date.now();
    const id = await group(['a', 'b', 'c'], { a: claimedItem(now, 'w1', now + 60_000), b: claimedItem(now, 'w1', now - 1) });
    const step = (task: string) =>
      scripts().censoStep(keys.group(id), keys.waiting, keys.events, task, startedItem(Date.now()), 100, '', 0, Date.now());
    expect(await step('a')).toBe(2);
    expect(await step('b')).toBe(1);
    expect(await field(id, 'b')).toMatchObject({ state: 'started' });
    expect((await field(id, 'b')) as { claim?: unknown }).not.toHaveProperty('claim');
    expect(await step('c')).toBe(1);
  });

  it("the API's drop names the claimer of a claimed task, and the group's last task takes its share and its place with it", async () => {
    await redis.del(keys.open);
    const now = Date.now();
    const id = await group(['a', 'b'], { a: claimedItem(now, 'w9', now + 60_000), b: startedItem(now) });
    const reply = await scripts().censoDropItems(keys.group(id), keys.waiting, keys.share(id), keys.open, id, 'a', 'b');
    expect(reply).toEqual([4, 2, 0, 1, 'w9']);
    expect(await redis.exists(keys.share(id), keys.group(id))).toBe(0);
    expect(await redis.zscore(keys.open, id)).toBeNull();
  });
});
