// Queue mode with Redis gone (a TCP proxy cut in front of it): the task and batch routes answer
// 503 `Fila de processamento indisponível.` at once (never a hang or a 500), the service closes
// without waiting for Redis, and everything answers again once Redis is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { startRedisProxy, startTestRedis, type RedisProxy, type TestRedis } from '../helpers/redis.js';
import { postAsync, request, startHarness, waitForTarefa, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retorno = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };
const QUEUE_DOWN = { erro: 'Fila de processamento indisponível.' };

let redis: TestRedis;
let proxy: RedisProxy;
let server: Harness;
beforeAll(async () => {
  redis = await startTestRedis();
  proxy = await startRedisProxy(redis.url);
  server = await startHarness('queue', { redisUrl: proxy.url });
});
afterAll(async () => {
  await proxy?.restore().catch(() => undefined);
  await server?.dispose();
  await proxy?.close();
  await redis?.stop();
});

describe('Redis unreachable', () => {
  it('every task and batch route answers 503 with Retry-After, then works again when Redis is back; closing does not wait for Redis', async () => {
    const id = (await postAsync(server, '/api/divergencias-rf', [retorno])).json().id as string;
    await waitForTarefa(server, id);
    const lote = (await request(server, 'POST', '/api/lotes')).json().id as string;

    await proxy.cut();
    const calls: Array<[string, string]> = [
      ['GET', `/api/tarefas/${id}`],
      ['GET', `/api/tarefas/${id}/resultado`],
      ['DELETE', `/api/tarefas/${id}`],
      ['GET', `/api/lotes/${lote}`],
      ['GET', `/api/lotes/${lote}/tarefas`],
      ['POST', `/api/lotes/${lote}/fechar`],
      ['POST', '/api/lotes'],
    ];
    for (const [method, route] of calls) {
      const answer = await request(server, method, route);
      expect(answer.status, `${method} ${route}`).toBe(503);
      expect(answer.json()).toEqual(QUEUE_DOWN);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    const upload = await postAsync(server, '/api/divergencias-rf', [retorno]);
    expect(upload.status).toBe(503);
    expect(upload.json()).toEqual(QUEUE_DOWN);

    await proxy.restore();
    await waitFor(async () => (await request(server, 'GET', `/api/tarefas/${id}`)).status === 200, {
      timeoutMs: onThisMachine(20_000),
      what: 'Redis back',
    });
    expect((await request(server, 'GET', `/api/tarefas/${id}`)).json().estado).toBe('concluida');
    const again = (await postAsync(server, '/api/divergencias-rf', [retorno])).json().id as string;
    expect((await waitForTarefa(server, again)).estado).toBe('concluida');

    // A last outage, and the service closes all the same.
    await proxy.cut();
    await server.stop();
  });
});
