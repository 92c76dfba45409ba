// The operators' queue dashboard at /admin/queues: absent unless BULL_BOARD_TOKEN is set and jobs
// go through BullMQ; when present, every page and API call needs the token (bearer header, or a
// cookie obtained once with ?token=, Secure over https, which behind a proxy needs TRUST_PROXY).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTestServer, type TestServer } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';

const TOKEN = 'painel-token-de-teste';
const BASE = '/admin/queues';

const get = (server: { url: string }, route: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${route}`, { headers, redirect: 'manual' });

describe('off by default', () => {
  it('404 without BULL_BOARD_TOKEN', async () => {
    const server = await startTestServer();
    try {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
        expect((await get(server, BASE, headers)).status).toBe(404);
      }
    } finally {
      await server.dispose();
    }
  });

  it('404 with a token but the embedded runner (no queue to show)', async () => {
    const server = await startTestServer({ BULL_BOARD_TOKEN: TOKEN });
    try {
      expect((await get(server, BASE, { authorization: `Bearer ${TOKEN}` })).status).toBe(404);
    } finally {
      await server.dispose();
    }
  });
});

describe('on (BULL_BOARD_TOKEN and REDIS_URL)', () => {
  let redis: TestRedis;
  let prefix: string;
  let server: TestServer;
  beforeAll(async () => {
    redis = await startTestRedis();
    prefix = uniqueQueuePrefix();
    server = await startTestServer({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, BULL_BOARD_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await server?.dispose();
    await deleteKeys(redis.url, prefix);
    await redis?.stop();
  });

  it('200 HTML for the bearer token holder', async () => {
    const response = await get(server, BASE, { authorization: `Bearer ${TOKEN}` });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('censo-api');
  });

  it.each([
    ['no credential', {}],
    ['a wrong bearer token', { authorization: `Bearer ${TOKEN}x` }],
    ['the API key', { 'x-api-key': API_KEY }],
    ['the API key as a bearer token', { authorization: `Bearer ${API_KEY}` }],
    ['a forged cookie', { cookie: `censo_board=${TOKEN}` }],
  ])('401 with %s, pages and API alike', async (_name, headers: Record<string, string>) => {
    for (const route of [BASE, `${BASE}/api/queues`]) {
      const response = await get(server, route, headers);
      expect(response.status, route).toBe(401);
      expect(await response.json()).toEqual({ erro: 'Credencial inválida (BULL_BOARD_TOKEN).' });
    }
  });

  it('?token= once: an HttpOnly cookie scoped to /admin/queues, and a redirect without the token', async () => {
    const first = await get(server, `${BASE}?token=${TOKEN}`);
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe(BASE);
    const setCookie = first.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^censo_board=[\w-]+; /);
    expect(setCookie).toContain('Path=/admin/queues');
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).not.toContain(TOKEN);

    const cookie = setCookie.split(';')[0]!;
    const page = await get(server, BASE, { cookie });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const api = await get(server, `${BASE}/api/queues`, { cookie });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: { name: string; readOnlyMode: boolean }[] };
    expect(body.queues.map((queue) => [queue.name, queue.readOnlyMode])).toEqual([
      ['censo-jobs', true],
      ['censo-tarefas', true],
    ]);
  });

  it('X-Forwarded-Proto counts for nothing without TRUST_PROXY: no Secure on the cookie', async () => {
    const first = await get(server, `${BASE}?token=${TOKEN}`, { 'x-forwarded-proto': 'https' });
    expect(first.status).toBe(303);
    expect(first.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i);
  });

  it('a wrong ?token= sets no cookie', async () => {
    const response = await get(server, `${BASE}?token=${TOKEN}x`);
    expect(response.status).toBe(401);
    expect(response.headers.get('set-cookie')).toBeNull();
  });

  it('behind the TLS proxy with TRUST_PROXY set, the cookie is Secure (SPEC §9)', async () => {
    const proxied = await startTestServer({
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      BULL_BOARD_TOKEN: TOKEN,
      TRUST_PROXY: '127.0.0.1',
    });
    try {
      const overTls = await get(proxied, `${BASE}?token=${TOKEN}`, { 'x-forwarded-proto': 'https' });
      expect(overTls.status).toBe(303);
      expect(overTls.headers.get('set-cookie')).toMatch(/; Secure$/);
      // The same service reached over plain http (no proxy header) sets no Secure cookie.
      const plain = await get(proxied, `${BASE}?token=${TOKEN}`);
      expect(plain.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i);
    } finally {
      await proxied.dispose();
    }
  });

  it("QUEUE_SHARDS=2: every shard's two queues, the second shard's named shard-1/", async () => {
    const sharded = await startTestServer({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, BULL_BOARD_TOKEN: TOKEN, QUEUE_SHARDS: '2' });
    try {
      const response = await get(sharded, `${BASE}/api/queues`, { authorization: `Bearer ${TOKEN}` });
      expect(response.status).toBe(200);
      const { queues } = (await response.json()) as { queues: Array<{ name: string }> };
      expect(queues.map((queue) => queue.name).sort()).toEqual([
        'censo-jobs',
        'censo-tarefas',
        'shard-1/censo-jobs',
        'shard-1/censo-tarefas',
      ]);
    } finally {
      await sharded.dispose();
    }
  });

  it('stays out of the OpenAPI document', async () => {
    const doc = (await (await fetch(`${server.url}/docs/json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/admin'))).toEqual([]);
  });
});
