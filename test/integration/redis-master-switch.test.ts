// The worker connections' follower of `+switch-master` (shared/src/queue/master-switch.ts),
// against a real Redis standing in for a sentinel: the announcement is an ordinary pub/sub
// message, published here by hand, so the test decides exactly where the "new master" is.
// A connection already on the announced master keeps its socket and the command in flight on it
// (ioredis's failoverDetector dropped it and resent the command); one elsewhere is dropped and
// asks again; one still connecting is left to finish. Each failover is reported once (the
// worker's censo_redis_failovers_total), however many sentinels announce it.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MasterSwitchWatcher, parseSwitch, type RedisEvents } from '@censo/shared';
import { useTestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const testRedis = useTestRedis();
const CHANNEL = '+switch-master';
const opened: Redis[] = [];

afterEach(() => {
  vi.useRealTimers();
  for (const client of opened.splice(0)) client.disconnect();
});

function client(options: { lazyConnect?: boolean } = {}): Redis {
  const redis = new Redis(testRedis.url, { ...options, retryStrategy: () => 50 });
  opened.push(redis);
  return redis;
}

/**
 * A watcher for a master group of its own that takes the test Redis for its sentinels: one, or
 * the same server listed `sentinels` times (each subscription hears every announcement, as from
 * that many sentinels).
 */
async function watcher(options: { sentinels?: number; onSwitch?: RedisEvents['onMasterSwitch'] } = {}): Promise<{
  watcher: MasterSwitchWatcher;
  name: string;
  /** How many connections subscribe to the announcements on the stand-in sentinel. */
  subscribers(): Promise<number>;
  announce(host: string, port: number): Promise<void>;
}> {
  const url = new URL(testRedis.url);
  const name = `censo-${randomUUID()}`;
  const publisher = client();
  const subscribers = async () => Number(((await publisher.pubsub('NUMSUB', CHANNEL)) as [string, number])[1]);
  const before = await subscribers();
  const sentinel = { host: url.hostname, port: Number(url.port || 6379) };
  const w = new MasterSwitchWatcher(
    {
      kind: 'sentinel',
      sentinels: Array.from({ length: options.sentinels ?? 1 }, () => sentinel),
      name,
      sentinelPassword: url.password ? decodeURIComponent(url.password) : null,
      password: null,
      tls: false,
    },
    Redis,
    { onSwitch: options.onSwitch },
  );
  return {
    watcher: w,
    name,
    subscribers,
    async announce(host, port) {
      await waitFor(async () => (await subscribers()) > before, { timeoutMs: onThisMachine(5_000), what: "the watcher's subscription" });
      await publisher.publish(CHANNEL, `${name} 10.0.0.1 6379 ${host} ${port}`);
    },
  };
}

const address = (redis: Redis) => {
  const socket = redis.stream as unknown as { remoteAddress: string; remotePort: number };
  return { host: socket.remoteAddress.replace(/^::ffff:/, ''), port: socket.remotePort };
};

/** A watcher of group `censo-ha` with no sentinels, fed announcements by hand, and how many switches it reported. */
function countingWatcher(): { w: MasterSwitchWatcher; reported: () => number } {
  let reported = 0;
  const w = new MasterSwitchWatcher(
    { kind: 'sentinel', sentinels: [], name: 'censo-ha', sentinelPassword: null, password: null, tls: false },
    Redis,
    { onSwitch: () => reported++ },
  );
  return { w, reported: () => reported };
}

describe('following +switch-master', () => {
  it('reads the announcement', () => {
    expect(parseSwitch('censo-ha 127.0.0.1 6379 127.0.0.1 6380')).toEqual({ name: 'censo-ha', host: '127.0.0.1', port: 6380 });
    expect(parseSwitch('censo-ha 127.0.0.1 6379')).toBeNull();
    expect(parseSwitch('censo-ha 127.0.0.1 6379 127.0.0.1 x')).toBeNull();
  });

  it('keeps a connection already on the announced master, and the command in flight on it', async () => {
    const { watcher: w, announce } = await watcher();
    const worker = client();
    await once(worker, 'ready');
    w.track(worker);
    let closes = 0;
    worker.on('close', () => closes++);
    const key = `censo-switch-${randomUUID()}`;
    const blocked = worker.blpop(key, 3);
    const { host, port } = address(worker);
    await announce(host, port);
    await client().rpush(key, 'job');
    expect(await blocked).toEqual([key, 'job']);
    expect(closes).toBe(0);
  });

  it('drops a connection on another server, which connects again', async () => {
    const { watcher: w, announce } = await watcher();
    const worker = client();
    await once(worker, 'ready');
    w.track(worker);
    const closed = once(worker, 'close');
    const { host, port } = address(worker);
    await announce(host, port + 1);
    await closed;
    await once(worker, 'ready');
    expect(await worker.ping()).toBe('PONG');
  });

  it("ignores another group's announcement and never connects a lazy connection", async () => {
    const { watcher: w, name } = await watcher();
    const worker = client();
    await once(worker, 'ready');
    const lazy = client({ lazyConnect: true });
    w.track(worker);
    w.track(lazy);
    let closes = 0;
    worker.on('close', () => closes++);
    w.switched(`other-${name} 10.0.0.1 6379 10.0.0.2 6379`);
    w.switched(`${name} 10.0.0.1 6379 10.0.0.2`);
    expect(closes).toBe(0);
    w.switched(`${name} 10.0.0.1 6379 10.0.0.2 6379`);
    await once(worker, 'close');
    expect(lazy.status).toBe('wait');
  });

  it('leaves a connection that is still connecting to find its master itself', async () => {
    const { watcher: w, name } = await watcher();
    const worker = client({ lazyConnect: true });
    w.track(worker);
    const ready = once(worker, 'ready');
    void worker.connect().catch(() => undefined);
    expect(worker.status).toBe('connecting');
    w.switched(`${name} 10.0.0.1 6379 10.0.0.2 6379`);
    await ready;
    expect(await worker.ping()).toBe('PONG');
  });

  it('closes its subscriptions once every connection it follows has ended, and opens them again', async () => {
    const { watcher: w, name, subscribers } = await watcher();
    const before = await subscribers();
    const a = client();
    const b = client();
    await Promise.all([once(a, 'ready'), once(b, 'ready')]);
    w.track(a);
    w.track(b);
    await waitFor(async () => (await subscribers()) === before + 1, { timeoutMs: onThisMachine(5_000), what: 'the subscription' });
    await a.quit();
    expect(await subscribers()).toBe(before + 1);
    await b.quit();
    await waitFor(async () => (await subscribers()) === before, { timeoutMs: onThisMachine(5_000), what: 'the subscription to close' });
    // Connected again after it ended (as BullMQ does with its blocking connection): followed again.
    await b.connect();
    await waitFor(async () => (await subscribers()) === before + 1, { timeoutMs: onThisMachine(5_000), what: 'the subscription again' });
    const closed = once(b, 'close');
    const { host, port } = address(b);
    w.switched(`${name} 10.0.0.1 6379 ${host} ${port + 1}`);
    await closed;
  });

  it('reports a failover once, however many sentinels announce it', async () => {
    const reported: unknown[] = [];
    const { watcher: w, name, subscribers } = await watcher({ sentinels: 3, onSwitch: (announced) => reported.push(announced) });
    const before = await subscribers();
    const switched = vi.spyOn(w, 'switched');
    w.track(client({ lazyConnect: true }));
    await waitFor(async () => (await subscribers()) === before + 3, { timeoutMs: onThisMachine(5_000), what: 'the three subscriptions' });
    await client().publish(CHANNEL, `${name} 10.0.0.1 6379 10.0.0.2 6380`);
    await waitFor(() => switched.mock.calls.length === 3, { timeoutMs: onThisMachine(5_000), what: 'the three announcements' });
    expect(reported).toEqual([{ name, host: '10.0.0.2', port: 6380 }]);
  });

  it('reports each failover; a late announcement of the last one, or another group, is none', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { w, reported } = countingWatcher();
    w.switched('censo-ha 10.0.0.1 6379 10.0.0.2 6379');
    w.switched('censo-ha 10.0.0.1 6379 10.0.0.2 6379');
    expect(reported()).toBe(1);
    // The next failover moves away from that master: reported.
    vi.advanceTimersByTime(5_000);
    w.switched('censo-ha 10.0.0.2 6379 10.0.0.3 6379');
    expect(reported()).toBe(2);
    // A sentinel that missed the first switch announces the second from its stale view.
    vi.advanceTimersByTime(20_000);
    w.switched('censo-ha 10.0.0.1 6379 10.0.0.3 6379');
    w.switched('other-group 10.0.0.3 6379 10.0.0.1 6379');
    w.switched('censo-ha 10.0.0.3 6379');
    expect(reported()).toBe(2);
    // Back to the first master: a failover of its own.
    w.switched('censo-ha 10.0.0.3 6379 10.0.0.1 6379');
    expect(reported()).toBe(3);
  });

  it('past 30 s, the same new master again counts (a failover in between may have gone unheard)', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { w, reported } = countingWatcher();
    w.switched('censo-ha 10.0.0.1 6379 10.0.0.2 6379');
    vi.advanceTimersByTime(29_999);
    w.switched('censo-ha 10.0.0.3 6379 10.0.0.2 6379');
    expect(reported()).toBe(1);
    vi.advanceTimersByTime(1);
    w.switched('censo-ha 10.0.0.3 6379 10.0.0.2 6379');
    expect(reported()).toBe(2);
  });
});
