// With REDIS_URL, the per-key rate limit is counted in Redis: several API replicas enforce one
// budget per key, not one each. A Redis that does not answer the limiter within 500 ms lets the
// request through unchecked (a slow counter must not hold the service), and /metrics counts each
// such request in censo_rate_limit_skipped_total, so an operator can see the limit was not applied.
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { logLines } from '../helpers/log-lines.js';
import { API_KEY, formWith, post, startTestServer, type TestServer } from '../helpers/http.js';
import { sampleValue, scrapeMetrics } from '../helpers/metrics.js';
import { freePort } from '../helpers/ports.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { startRedisServer, stopRedisServer } from '../helpers/redis-server.js';

const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');
const retorno = () => formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);
const RATE_LIMITED = { erro: 'Limite de requisições excedido, tente novamente em instantes.' };

describe('rate limit across API replicas', () => {
  let redis: TestRedis;
  let prefix: string;
  const servers: TestServer[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    prefix = uniqueQueuePrefix();
    const env = { REDIS_URL: redis.url, QUEUE_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '3', WORKER_CONCURRENCY: '1' };
    servers.push(await startTestServer(env), await startTestServer(env));
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.dispose()));
    await deleteKeys(redis.url, prefix);
    await redis.stop();
  });

  it('shares one budget per key between two API processes', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const server = servers[i % 2]!;
      const res = await post(server, '/api/divergencias-rf', await retorno());
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body).toEqual(RATE_LIMITED);
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

// A redis-server of this file's own: it is paused, which the shared one must never be.
describe('a Redis too slow for the limiter', () => {
  let redisProcess: ChildProcess | null = null;
  let redis: Redis;
  let server: TestServer;
  const { lines, sink: log } = logLines<{ level: number; msg: string }>();
  const limiterLines = () => lines.filter((line) => line.msg.startsWith('rate limit ')).map((line) => `${line.level} ${line.msg}`);

  beforeAll(async () => {
    const port = await freePort();
    redisProcess = await startRedisServer(port);
    redis = new Redis(port, '127.0.0.1');
    expect(await redis.ping()).toBe('PONG');
    // The service starts while Redis holds every command (the connections' ready checks too) for
    // 800 ms: the limiter's connection must be ready before the first request is let in.
    expect(await redis.call('CLIENT', 'PAUSE', '800', 'ALL')).toBe('OK');
    server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: '1', LOG_LEVEL: 'info' }, log);
  });

  afterAll(async () => {
    await server?.dispose();
    redis?.disconnect();
    await stopRedisServer(redisProcess);
  });

  async function skipped(): Promise<number> {
    return sampleValue(await scrapeMetrics(server.url, { 'x-api-key': API_KEY }), 'censo_rate_limit_skipped_total') ?? 0;
  }

  it('lets the request through unchecked and counts it; the limit holds again once Redis answers', async () => {
    // The limiter was connected before the server answered: the minute's one request is counted
    // (a check made while its connection was still opening would have passed unchecked).
    expect((await post(server, '/api/divergencias-rf', await retorno())).status).toBe(200);
    expect(await post(server, '/api/divergencias-rf', await retorno())).toMatchObject({ status: 429, body: RATE_LIMITED });
    expect(await skipped()).toBe(0);

    // Every write waits 1.5 s: the limiter's count (a Lua script that writes) gives up at 500 ms;
    // the job's own commands wait for the pause to end, so the answer is the real one.
    expect(await redis.call('CLIENT', 'PAUSE', '1500', 'WRITE')).toBe('OK');
    const unchecked = await post(server, '/api/divergencias-rf', await retorno());
    expect(unchecked).toMatchObject({ status: 200, body: basico.expectedDivergencias });
    expect(await skipped()).toBe(1);
    expect(limiterLines()).toEqual(['40 rate limit not applied: Redis did not answer the limiter, requests pass unchecked']);

    expect(await redis.call('CLIENT', 'UNPAUSE')).toBe('OK');
    expect(await post(server, '/api/divergencias-rf', await retorno())).toMatchObject({ status: 429, body: RATE_LIMITED });
    expect(await skipped()).toBe(1);
    // One line when the checks start failing, one when they work again.
    expect(limiterLines()).toEqual([
      '40 rate limit not applied: Redis did not answer the limiter, requests pass unchecked',
      '30 rate limit applied again: the limiter reaches Redis',
    ]);
  });
});
