// Behind a proxy (SPEC §9): TRUST_PROXY makes X-Forwarded-Proto/For count, from the peers it names
// and from no one else. Over https through a trusted proxy the sign-in cookies are Secure and the
// session cookie takes the __Host- name, even with an http PUBLIC_URL; the access log records the
// client's address from X-Forwarded-For. Without TRUST_PROXY, or from a peer it does not name
// (here every request comes from 127.0.0.1), the same headers change nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLineOf, type AccessLine } from '../helpers/access-log.js';
import { API_KEY, startTestServer, type TestServer } from '../helpers/http.js';
import { signInEnv, startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/ports.js';
import { TestBrowser, signInUntilCallback } from '../helpers/oidc-browser.js';
import { onThisMachine } from '../helpers/deadline.js';

const ACCOUNTS = { ana: { name: 'Ana Lima', email: 'ana@seduc.example', groups: ['censo-retorno', 'censo-consulta'] } };
/** What the shipped TLS proxy sends for a browser at 203.0.113.7 (TEST-NET-3). */
const VIA_TLS_PROXY = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.7' };

/** One service per TRUST_PROXY value, each with its own access log. */
const SETUPS = {
  trusted: '127.0.0.1',
  off: '',
  otherPeer: '10.0.0.0/8',
} as const;
type Setup = keyof typeof SETUPS;

let provider: TestProvider;
let logDir: string;
const servers = {} as Record<Setup, { server: TestServer; publicUrl: string; accessLog: string }>;

beforeAll(async () => {
  const ports = { trusted: await freePort(), off: await freePort(), otherPeer: await freePort() };
  const urls = Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, `http://127.0.0.1:${port}`])) as Record<Setup, string>;
  provider = await startTestProvider(Object.values(urls), ACCOUNTS);
  logDir = await mkdtemp(path.join(os.tmpdir(), 'censo-proxy-'));
  for (const name of Object.keys(SETUPS) as Setup[]) {
    const accessLog = path.join(logDir, `${name}.log`);
    const server = await startTestServer({
      PORT: String(ports[name]),
      ACCESS_LOG: accessLog,
      ...(SETUPS[name] === '' ? {} : { TRUST_PROXY: SETUPS[name] }),
      ...signInEnv(provider, urls[name]),
    });
    servers[name] = { server, publicUrl: urls[name], accessLog };
  }
}, onThisMachine(60_000));

afterAll(async () => {
  for (const { server } of Object.values(servers)) await server?.dispose();
  await provider?.close();
  await rm(logDir, { recursive: true, force: true });
});

const attributes = (header: string) => header.split(';').map((part) => part.trim().toLowerCase());

/** A sign-in whose callback arrives with `headers` (as through the proxy); the Set-Cookie of the session. */
async function sessionCookieFrom(setup: Setup, headers: Record<string, string>): Promise<{ name: string; value: string; attrs: string[] }> {
  const browser = new TestBrowser();
  const { callback } = await signInUntilCallback(browser, servers[setup].publicUrl, 'ana');
  const back = await browser.fetch(callback, { headers });
  expect(back.status).toBe(303);
  const header = back.headers.getSetCookie().find((h) => /^(__Host-)?censo-sessao=/.test(h))!;
  expect(header).toBeDefined();
  const [pair] = header.split(';');
  const eq = pair!.indexOf('=');
  return { name: pair!.slice(0, eq), value: pair!.slice(eq + 1), attrs: attributes(header) };
}

const sessao = (setup: Setup, cookie: string, headers: Record<string, string> = {}) =>
  fetch(`${servers[setup].publicUrl}/auth/sessao`, { headers: { cookie, ...headers } }).then((r) => r.status);

/** The Set-Cookie of /auth/login: the pending sign-in's cookie. */
async function pendingCookie(setup: Setup, headers: Record<string, string>): Promise<string[]> {
  const leaving = await fetch(`${servers[setup].publicUrl}/auth/login`, { headers, redirect: 'manual' });
  expect(leaving.status).toBe(302);
  const header = leaving.headers.getSetCookie().find((h) => h.startsWith('censo-entrada='));
  expect(header).toBeDefined();
  return attributes(header!);
}

describe('cookies over https through a trusted proxy (TRUST_PROXY=127.0.0.1)', () => {
  it('the session cookie is Secure and takes the __Host- name, though PUBLIC_URL is http', async () => {
    const cookie = await sessionCookieFrom('trusted', VIA_TLS_PROXY);
    expect(cookie.name).toBe('__Host-censo-sessao');
    expect(cookie.attrs).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=lax', 'path=/']));
    expect(cookie.attrs.some((a) => a.startsWith('domain='))).toBe(false);
    // Read back under that name over https, and only under it: a plain-named cookie (one anyone on
    // the network can plant over http) does not count there.
    expect(await sessao('trusted', `__Host-censo-sessao=${cookie.value}`, VIA_TLS_PROXY)).toBe(200);
    expect(await sessao('trusted', `censo-sessao=${cookie.value}`, VIA_TLS_PROXY)).toBe(401);
    expect(await pendingCookie('trusted', VIA_TLS_PROXY)).toContain('secure');
  });

  it('a request over plain http to the same service still gets the plain cookie', async () => {
    const cookie = await sessionCookieFrom('trusted', {});
    expect(cookie.name).toBe('censo-sessao');
    expect(cookie.attrs).not.toContain('secure');
    expect(await pendingCookie('trusted', {})).not.toContain('secure');
  });
});

describe.each([
  ['without TRUST_PROXY', 'off'],
  ['from a peer TRUST_PROXY does not name (10.0.0.0/8)', 'otherPeer'],
] as const)('X-Forwarded-Proto %s', (_name, setup) => {
  it('is ignored: plain cookie names, never Secure', async () => {
    const cookie = await sessionCookieFrom(setup, VIA_TLS_PROXY);
    expect(cookie.name).toBe('censo-sessao');
    expect(cookie.attrs).not.toContain('secure');
    expect(await pendingCookie(setup, VIA_TLS_PROXY)).not.toContain('secure');
  });
});

describe('the access log’s client address', () => {
  async function lineOf(setup: Setup, headers: Record<string, string>): Promise<AccessLine> {
    // An identified call (the key) that needs no database: the query route's 503 is logged too.
    const answer = await fetch(`${servers[setup].publicUrl}/api/query`, { headers: { 'x-api-key': API_KEY, ...headers } });
    return accessLineOf(servers[setup].accessLog, answer.headers.get('x-request-id'));
  }

  it('is X-Forwarded-For’s client when the peer is a trusted proxy', async () => {
    expect(await lineOf('trusted', VIA_TLS_PROXY)).toMatchObject({ chave: 0, ip: '203.0.113.7', route: '/api/query' });
    // A chain: the client is the last address the trusted proxies did not add.
    expect(await lineOf('trusted', { 'x-forwarded-for': '198.51.100.9, 127.0.0.1' })).toMatchObject({ ip: '198.51.100.9' });
    expect(await lineOf('trusted', {})).toMatchObject({ ip: '127.0.0.1' });
  });

  it.each(['off', 'otherPeer'] as const)('is the socket’s peer otherwise (%s): X-Forwarded-For is anyone’s to write', async (setup) => {
    expect(await lineOf(setup, VIA_TLS_PROXY)).toMatchObject({ chave: 0, ip: '127.0.0.1' });
  });
});
