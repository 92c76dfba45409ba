// The worker connections' follower of `+switch-master` (shared/src/queue/master-switch.ts),
// against a real Redis standing in for a sentinel: the announcement is an ordinary pub/sub
// message, published here by hand, so the test decides exactly where the "new master" is.
// A connection already on the announced master keeps its socket and the command in flight on it
// (ioredis's failoverDetector dropped it and resent the command); one elsewhere is dropped and
// asks again; one still connecting is left to finish.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { MasterSwitchWatcher, parseSwitch } from '@censo/shared';
import { useTestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';

const testRedis = useTestRedis();
const CHANNEL = '+switch-master';
const opened: Redis[] = [];

afterEach(() => {
  for (const client of opened.splice(0)) client.disconnect();
});

function client(options: { lazyConnect?: boolean } = {}): Redis {
  const redis = new Redis(testRedis.url, { ...options, retryStrategy: () => 50 });
  opened.push(redis);
  return redis;
}

/** A watcher for a master group of its own that takes the test Redis for its one sentinel. */
async function watcher(): Promise<{
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
  const w = new MasterSwitchWatcher(
    {
      kind: 'sentinel',
      sentinels: [{ host: url.hostname, port: Number(url.port || 6379) }],
      name,
      sentinelPassword: url.password ? decodeURIComponent(url.password) : null,
      password: null,
      tls: false,
    },
    Redis,
  );
  return {
    watcher: w,
    name,
    subscribers,
    async announce(host, port) {
      await waitFor(async () => (await subscribers()) > before, { timeoutMs: 5_000, what: "the watcher's subscription" });
      await publisher.publish(CHANNEL, `${name} 10.0.0.1 6379 ${host} ${port}`);
    },
  };
}

const address = (redis: Redis) => {
  const socket = redis.stream as unknown as { remoteAddress: string; remotePort: number };
  return { host: socket.remoteAddress.replace(/^::ffff:/, ''), port: socket.remotePort };
};

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
    await waitFor(async () => (await subscribers()) === before + 1, { timeoutMs: 5_000, what: 'the subscription' });
    await a.quit();
    expect(await subscribers()).toBe(before + 1);
    await b.quit();
    await waitFor(async () => (await subscribers()) === before, { timeoutMs: 5_000, what: 'the subscription to close' });
    // Connected again after it ended (as BullMQ does with its blocking connection): followed again.
    await b.connect();
    await waitFor(async () => (await subscribers()) === before + 1, { timeoutMs: 5_000, what: 'the subscription again' });
    const closed = once(b, 'close');
    const { host, port } = address(b);
    w.switched(`${name} 10.0.0.1 6379 ${host} ${port + 1}`);
    await closed;
  });
});
