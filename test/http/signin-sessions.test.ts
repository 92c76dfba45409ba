// Staff sessions (SPEC §8) beyond the sign-in itself: idle and absolute lifetimes (shortened
// through the app's internal option, never a setting), Secure and __Host- cookies when PUBLIC_URL
// is https, sessions shared through Redis by two API instances in queue mode, an ID token whose
// signature does not verify, a provider that does not answer, and the rate limit counted per person.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { startTestServer, type TestServer } from '../helpers/http.js';
import { signInEnv, startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/ports.js';
import { TestBrowser, signIn, signInUntilCallback } from '../helpers/oidc-browser.js';
import { deleteKeys, keysMatching, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { onThisMachine } from '../helpers/deadline.js';

const ACCOUNTS = {
  ana: { name: 'Ana Lima', email: 'ana@seduc.example', groups: ['censo-retorno', 'censo-consulta'] },
  bia: { name: 'Bia Reis', email: 'bia@seduc.example', groups: ['censo-consulta'] },
};
const SECURE_URL = 'https://censo.seduc.example';
const IDLE_MS = 2_000;
const ABSOLUTE_MS = 5_000;

let provider: TestProvider;
let badProvider: TestProvider;
let redis: TestRedis;
const prefix = uniqueQueuePrefix();
const urls = { short: '', pair: '', bad: '' };
let short: RunningServer;
let secure: TestServer;
let pairA: TestServer;
let pairB: TestServer;
let bad: TestServer;
let unreachable: TestServer;
let staffOnly: TestServer;

beforeAll(async () => {
  const ports = { short: await freePort(), pair: await freePort(), bad: await freePort() };
  for (const name of ['short', 'pair', 'bad'] as const) urls[name] = `http://127.0.0.1:${ports[name]}`;
  provider = await startTestProvider([urls.short, urls.pair, SECURE_URL], ACCOUNTS);
  badProvider = await startTestProvider([urls.bad], ACCOUNTS, { wrongKeys: true });
  redis = await startTestRedis();

  const shortConfig = loadConfig({
    API_KEY: 'chave',
    HOST: '127.0.0.1',
    PORT: String(ports.short),
    LOG_LEVEL: 'silent',
    ACCESS_LOG: '/dev/null',
    WORKER_CONCURRENCY: '1',
    RATE_LIMIT_PER_MINUTE: '2',
    ...signInEnv(provider, urls.short),
  });
  short = await startServer(shortConfig, 'all', undefined, { sessionLifetimes: { idleMs: IDLE_MS, absoluteMs: ABSOLUTE_MS } });
  secure = await startTestServer(signInEnv(provider, SECURE_URL));
  // Two instances of one deployment: the same Redis, prefix, PUBLIC_URL and SESSION_SECRET.
  const pairEnv = { REDIS_URL: redis.url, QUEUE_PREFIX: prefix, ...signInEnv(provider, urls.pair) };
  pairA = await startTestServer({ PORT: String(ports.pair), ...pairEnv });
  pairB = await startTestServer(pairEnv);
  bad = await startTestServer({ PORT: String(ports.bad), ...signInEnv(badProvider, urls.bad) });
  staffOnly = await startTestServer({ API_KEY: '', ...signInEnv(provider, 'http://127.0.0.1:9') });
  unreachable = await startTestServer(
    signInEnv({ issuer: `http://127.0.0.1:${await freePort()}`, close: async () => undefined }, 'http://127.0.0.1:9'),
  );
}, onThisMachine(90_000));

afterAll(async () => {
  await short?.close();
  for (const server of [secure, pairA, pairB, bad, unreachable, staffOnly]) await server?.dispose();
  await provider?.close();
  await badProvider?.close();
  if (redis) await deleteKeys(redis.url, prefix);
  await redis?.stop();
});

const sessao = (browser: TestBrowser, base: string) => browser.fetch(`${base}/auth/sessao`).then((visit) => visit.status);

describe('session lifetimes', () => {
  it('ends a session left idle past its idle lifetime', async () => {
    const browser = new TestBrowser();
    await signIn(browser, urls.short, 'ana');
    expect(await sessao(browser, urls.short)).toBe(200);
    await sleep(IDLE_MS + 700);
    expect(await sessao(browser, urls.short)).toBe(401);
    expect((await browser.fetch(`${urls.short}/api/query`)).status).toBe(401);
  });

  it('keeps a session in use alive past the idle lifetime, and ends it at the absolute one all the same', async () => {
    const browser = new TestBrowser();
    await signIn(browser, urls.short, 'ana');
    const signedInAt = Date.now();
    const seen: number[] = [];
    let lastAliveAt = signedInAt;
    // Activity every 400 ms: never idle. Bounded by twice the absolute lifetime.
    while (Date.now() - signedInAt < 2 * ABSOLUTE_MS) {
      const status = await sessao(browser, urls.short);
      seen.push(status);
      if (status !== 200) break;
      lastAliveAt = Date.now();
      await sleep(400);
    }
    expect(seen.at(-1)).toBe(401);
    expect(seen.slice(0, -1).every((status) => status === 200)).toBe(true);
    // Alive through more than two idle lifetimes of activity, before the end. Measured in time,
    // not in requests: on a loaded machine each round trip takes longer than the 400 ms pause.
    expect(lastAliveAt - signedInAt).toBeGreaterThan(2 * IDLE_MS);
  });
});

describe('cookies when PUBLIC_URL is https', () => {
  it('are Secure, and the session cookie takes the __Host- prefix', async () => {
    const browser = new TestBrowser({ [SECURE_URL]: secure.url });
    await signIn(browser, SECURE_URL, 'ana');
    const session = browser.setCookies.filter((header) => header.startsWith('__Host-censo-sessao='));
    expect(session).toHaveLength(1);
    const attributes = session[0]!.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'secure', 'samesite=lax', 'path=/']));
    const state = browser.setCookies.find((header) => header.startsWith('censo-entrada='))!;
    expect(state.toLowerCase()).toMatch(/; secure/);
    expect(state).toMatch(/; Path=\/auth(;|$)/);
    expect(await sessao(browser, SECURE_URL)).toBe(200);
  });
});

describe('sessions in Redis (queue mode)', () => {
  it('are known to every API instance, stored under the queue prefix by a digest of the cookie, and end everywhere', async () => {
    const browser = new TestBrowser();
    await signIn(browser, urls.pair, 'ana');
    // Same host for the browser: the cookie set by A goes to B as well.
    expect(await sessao(browser, pairB.url)).toBe(200);

    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      const keys = await keysMatching(client, `${prefix}:sessao:*`);
      expect(keys).toHaveLength(1);
      const cookie = browser.cookie(urls.pair, 'censo-sessao')!.value;
      expect(keys[0]).not.toContain(cookie);
      expect(await client.get(keys[0]!)).not.toContain(cookie);
      const ttl = await client.pttl(keys[0]!);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(30 * 60_000);

      const csrf = (await browser.fetch(`${pairB.url}/auth/sessao`)).headers.get('x-csrf-token')!;
      expect((await browser.fetch(`${pairB.url}/auth/logout`, { method: 'POST', headers: { 'x-csrf-token': csrf } })).status).toBe(303);
      expect(await client.exists(keys[0]!)).toBe(0);
    } finally {
      client.disconnect();
    }
    expect(await sessao(browser, pairA.url)).toBe(401);
  });
});

describe('what the relying party refuses', () => {
  it('an ID token whose signature does not verify with the provider’s published keys', async () => {
    const browser = new TestBrowser();
    const { callback } = await signInUntilCallback(browser, urls.bad, 'ana');
    const answer = await browser.fetch(callback);
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('A resposta do provedor de identidade não pôde ser validada.');
    expect(browser.cookie(urls.bad, 'censo-sessao')).toBeUndefined();
  });

  it('a provider that does not answer: a page that says so, and the keys still work', async () => {
    const browser = new TestBrowser();
    const answer = await browser.fetch(`${unreachable.url}/auth/login`);
    expect(answer.status).toBe(503);
    expect(answer.body).toContain('O provedor de identidade não respondeu. Tente de novo em instantes.');
    const listing = await browser.fetch(`${unreachable.url}/api/query`, { headers: { 'x-api-key': 'test-key' } });
    expect(listing.status).toBe(503); // no DATABASE_URL: the query route's own 503, past the key check
    expect(JSON.parse(listing.body)).toEqual({ erro: 'Consulta não configurada (defina a env DATABASE_URL).' });
  });
});

describe('sign-in without API_KEY (staff only)', () => {
  it('answers 401 to a request with neither, and the 503 of §4 to one with a key', async () => {
    const client = new TestBrowser();
    const none = await client.fetch(`${staffOnly.url}/api/query`);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
    const keyed = await client.fetch(`${staffOnly.url}/api/query`, { headers: { 'x-api-key': 'qualquer' } });
    expect(keyed.status).toBe(503);
    expect(JSON.parse(keyed.body)).toEqual({ erro: 'API não configurada (defina a env API_KEY).' });
  });
});

describe('the rate limit with sessions', () => {
  it('counts each person on their own', async () => {
    const ana = new TestBrowser();
    await signIn(ana, urls.short, 'ana');
    const bia = new TestBrowser();
    await signIn(bia, urls.short, 'bia');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await ana.fetch(`${urls.short}/api/query`)).status);
    expect(statuses.at(-1)).toBe(429);
    expect((await bia.fetch(`${urls.short}/api/query`)).status).not.toBe(429);
  });
});
