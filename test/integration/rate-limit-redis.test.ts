// With REDIS_URL, the per-key rate limit is counted in Redis: several API replicas enforce one
// budget per key, not one each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, post, startTestServer, type TestServer } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';

const [basico] = fixtureCases();
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

describe('rate limit across API replicas', () => {
  it('shares one budget per key between two API processes', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const server = servers[i % 2]!;
      const form = await formWith([{ field: 'retorno', path: basico!.retorno.json, filename: 'retorno.json' }]);
      const res = await post(server, '/api/divergencias-rf', form);
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body).toEqual({ erro: 'Limite de requisições excedido, tente novamente em instantes.' });
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
