// Issue 50: MAX_LOTES_ABERTOS counts only open batches, so creating and closing in a loop made 60
// batches past a limit of 3. MAX_LOTES_POR_HORA bounds the batches a principal *creates* in any
// hour, open or closed, in embedded and queue mode; every API_KEY value is the one integration
// (SPEC §7.1), so they share one quota, while a task's own principal is untouched by another's.
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@censo/shared';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, type Answer, type Harness, type Mode } from '../helpers/tarefas.js';

const redis = useTestRedis();
const MINUTE = 60_000;

const createLote = (server: Harness, key: string): Promise<Answer> =>
  request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json', 'x-api-key': key } });

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness | undefined;
  afterEach(async () => {
    await server?.dispose();
    server = undefined;
  });

  it('MAX_LOTES_POR_HORA batches created per hour, closed or not, then 429 with Retry-After; all API_KEY values count as one', async () => {
    let clock = Date.parse('2026-11-28T10:00:00Z');
    server = await startHarness(mode, {
      redisUrl: redis.url,
      now: () => clock,
      env: { API_KEY: 'chave-a,chave-b', MAX_LOTES_ABERTOS: '3', MAX_LOTES_POR_HORA: '5' },
    });
    // The loop of the finding: create, close, create again; the open count never passes 1.
    for (let i = 0; i < 5; i++) {
      const created = await createLote(server, i % 2 === 0 ? 'chave-a' : 'chave-b');
      expect(created.status).toBe(201);
      expect(
        (await request(server, 'POST', `/api/lotes/${created.json().id as string}/fechar`, { headers: { 'x-api-key': 'chave-a' } })).status,
      ).toBe(200);
      clock += 10 * MINUTE;
    }
    // 50 minutes after the first: the sixth, with either key, is refused until the first leaves the hour.
    for (const key of ['chave-a', 'chave-b']) {
      const refused = await createLote(server, key);
      expect(refused.status).toBe(429);
      expect(refused.json()).toEqual({ erro: 'Muitos lotes criados na última hora.' });
      expect(refused.headers.get('retry-after')).toBe(String(10 * 60));
      expect(refused.headers.get('content-type')).toContain('application/json');
    }
    // A refusal takes no place: once the first creation is an hour old, one more fits, not two.
    clock += 10 * MINUTE;
    expect((await createLote(server, 'chave-b')).status).toBe(201);
    const again = await createLote(server, 'chave-a');
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBe(10 * 60);
  });

  it('created together, the bound holds exactly', async () => {
    server = await startHarness(mode, { redisUrl: redis.url, env: { MAX_LOTES_ABERTOS: '100', MAX_LOTES_POR_HORA: '4' } });
    const answers = await Promise.all(Array.from({ length: 10 }, () => createLote(server!, 'test-key')));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(4);
    expect(answers.filter((a) => a.status === 429).map((a) => a.json().erro)).toEqual(
      Array(6).fill('Muitos lotes criados na última hora.'),
    );
  });
});

describe('MAX_LOTES_POR_HORA', () => {
  it('defaults to 200 and takes a whole number from 1', () => {
    expect(loadConfig({}).maxLotesPorHora).toBe(200);
    expect(loadConfig({ MAX_LOTES_POR_HORA: '7' }).maxLotesPorHora).toBe(7);
  });

  it.each(['0', '-1', '2.5', 'muitos'])('=%s stops the start with a one-line message naming the setting', (value) => {
    expect(() => loadConfig({ MAX_LOTES_POR_HORA: value })).toThrow(ConfigError);
    expect(() => loadConfig({ MAX_LOTES_POR_HORA: value })).toThrow(/^MAX_LOTES_POR_HORA /);
  });
});
