// Redis for integration tests: REDIS_URL_FOR_TESTS or REDIS_URL when set (.ci/run sets the
// former), else a container, else the local server (test-service.ts).
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { resolveTestService, type TestService } from './test-service.js';

export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

export type TestRedis = TestService;

/** The file's test Redis, started before its tests and stopped after them; `url` once started. */
export function useTestRedis(): { readonly url: string } {
  let server: TestRedis | undefined;
  beforeAll(async () => {
    server = await startTestRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get url() {
      if (!server) throw new Error('the test Redis is not started yet (use it inside a test or hook)');
      return server.url;
    },
  };
}

export function startTestRedis(): Promise<TestRedis> {
  return resolveTestService({
    fromEnv: process.env.REDIS_URL_FOR_TESTS ?? process.env.REDIS_URL,
    container: async () => {
      const { RedisContainer } = await import('@testcontainers/redis');
      const container = await new RedisContainer('redis:7-alpine').start();
      return { url: container.getConnectionUrl(), stop: async () => void (await container.stop()) };
    },
    localUrl: LOCAL_REDIS_URL,
  });
}

/**
 * A hash-tagged prefix of its own per test file, so files running in parallel never share a
 * queue, and every key of it can be found and deleted afterwards.
 */
export function uniqueQueuePrefix(): string {
  return `{test-${randomUUID()}}`;
}

/** Every key matching `pattern`: SCAN to the end (one call may return none of them on a busy server), never KEYS. */
export async function keysMatching(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}

/** Deletes every key under `prefix`. */
export async function deleteKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    // Its shards' keys too (QUEUE_SHARDS): `{p}` has shards `{p-1}`, `{p-2}`… (shards.ts).
    const shards = prefix.endsWith('}') ? [`${prefix.slice(0, -1)}-*}:*`] : [];
    const keys = (await Promise.all([`${prefix}:*`, ...shards].map((pattern) => keysMatching(redis, pattern)))).flat();
    for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
  } finally {
    redis.disconnect();
  }
}

/**
 * A TCP proxy in front of Redis that a test can cut and restore, to play "Redis is down" without
 * touching the real server (other test files may be using it).
 */
export interface RedisProxy {
  readonly url: string;
  /** Refuses new connections and drops the open ones. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  /**
   * Stops forwarding, both ways, on every connection (and on new ones) without closing any: the
   * client's commands hang as if Redis stalled, until thaw(). For holding a process at a Redis call.
   */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startRedisProxy(targetUrl: string): Promise<RedisProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  const pairs = new Set<readonly [net.Socket, net.Socket]>();
  let frozen = false;
  let port = 0;
  let server: net.Server | null = null;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 6379), target.hostname);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        const pair = [client, upstream] as const;
        pairs.add(pair);
        client.on('close', () => pairs.delete(pair));
        if (frozen) {
          client.pause();
          upstream.pause();
        } else client.pipe(upstream).pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });

  const cut = async () => {
    const s = server;
    server = null;
    for (const sock of sockets) sock.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  const auth = target.username || target.password ? `${target.username}:${target.password}@` : '';
  return {
    url: `redis://${auth}127.0.0.1:${port}${target.pathname}`,
    cut,
    restore: listen,
    // Unpiped, not only paused: a pipe resumes its source on the destination's 'drain'.
    freeze() {
      frozen = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    thaw() {
      frozen = false;
      for (const [client, upstream] of pairs) client.pipe(upstream).pipe(client);
    },
    close: cut,
  };
}
