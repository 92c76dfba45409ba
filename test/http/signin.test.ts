// Staff sign-in (SPEC §8, §4) against a real OpenID Provider (oidc-provider, in this process, on
// its own loopback address), driven over HTTP as a browser does: redirects followed, cookies kept
// per host, the provider's login and consent forms submitted. The code flow with PKCE, state and
// nonce (each one tampered with and refused), the session cookie, /api/* with a session (401, 403
// Permissão insuficiente, 403 Token CSRF inválido, never a redirect), default deny, sign-out with
// the provider's end_session_endpoint, the key mode unchanged, and the access log's lines.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLineOf, type AccessLine } from '../helpers/access-log.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, startTestServer, type TestServer } from '../helpers/http.js';
import { CLIENT_ID, signInEnv, startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/ports.js';
import { TestBrowser, signIn, signInUntilCallback, type Visit } from '../helpers/oidc-browser.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { onThisMachine } from '../helpers/deadline.js';

const KEYS = ['chave-zero-do-teste-de-entrada', 'chave-um-do-teste-de-entrada'];
const CREDENTIAL_401 = { erro: 'Credencial inválida (header x-api-key).' };
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const divergencias = (basico.expectedDivergencias as { divergencias: Record<string, unknown>[] }).divergencias;
const pessoas = (basico.expectedPessoas as { pessoas: Record<string, unknown>[] }).pessoas;

const ACCOUNTS = {
  ana: { name: 'Ana Lima', email: 'ana@seduc.example', groups: ['censo-retorno', 'censo-consulta'] },
  bia: { name: 'Bia Reis', email: 'bia@seduc.example', groups: ['censo-consulta'] },
  caio: { name: 'Caio Dias', email: 'caio@seduc.example', groups: ['censo-retorno'] },
  davi: { name: 'Davi Melo', email: 'davi@seduc.example', groups: ['biblioteca'] },
};

let provider: TestProvider;
let server: TestServer;
let keyOnly: TestServer;
let publicUrl: string;
let logDir: string;
let accessLog: string;
let pg: TestPostgres;
let schema: TestSchema;

beforeAll(async () => {
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  provider = await startTestProvider([publicUrl], ACCOUNTS);
  logDir = await mkdtemp(path.join(os.tmpdir(), 'censo-signin-'));
  accessLog = path.join(logDir, 'acesso.log');
  pg = await startTestPostgres();
  schema = await createTestSchema(pg.url);
  await createAuditsTable(schema.admin);
  await schema.admin.query(`INSERT INTO audits (auditable_id, user_id, action, created_at)
    SELECT g, g % 4, 'update', timestamp '2024-03-01' + g * interval '1 hour' FROM generate_series(1, 30) AS g`);
  server = await startTestServer({
    PORT: String(port),
    API_KEY: KEYS.join(','),
    ACCESS_LOG: accessLog,
    DATABASE_URL: schema.url,
    ...signInEnv(provider, publicUrl),
  });
  keyOnly = await startTestServer({ API_KEY: KEYS[0]! });
}, onThisMachine(60_000));

afterAll(async () => {
  await server?.dispose();
  await keyOnly?.dispose();
  await provider?.close();
  await schema?.drop();
  await pg?.stop();
  await rm(logDir, { recursive: true, force: true });
});

const json = (visit: Visit): unknown => JSON.parse(visit.body);
const sessionCookie = (browser: TestBrowser) => browser.cookie(publicUrl, 'censo-sessao')?.value;

/** Signed in as `login`, with the CSRF token the page would read from /auth/sessao. */
async function signedIn(login: string): Promise<{ browser: TestBrowser; csrf: string }> {
  const browser = new TestBrowser();
  await signIn(browser, publicUrl, login);
  const sessao = await browser.fetch(`${publicUrl}/auth/sessao`);
  expect(sessao.status).toBe(200);
  return { browser, csrf: sessao.headers.get('x-csrf-token')! };
}

async function uploadDivergencias(browser: TestBrowser, headers: Record<string, string> = {}): Promise<Visit> {
  const body = await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);
  return browser.fetch(`${publicUrl}/api/divergencias-rf`, { method: 'POST', headers, body });
}

/** Replaces a query parameter of the authorization request on its way to the provider. */
const replacing = (name: string, value: string) => (url: URL) => {
  url.searchParams.set(name, value);
  return url;
};

describe('signing in through the provider', () => {
  it('sends the person to the provider with PKCE S256, state and nonce, and back with a session cookie', async () => {
    const browser = new TestBrowser();
    const { authorization, callback } = await signInUntilCallback(browser, publicUrl, 'ana');
    expect(authorization.origin).toBe(provider.issuer);
    const asked = Object.fromEntries(authorization.searchParams);
    expect(asked).toMatchObject({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: `${publicUrl}/auth/callback`,
      scope: 'openid profile email groups',
      code_challenge_method: 'S256',
    });
    for (const name of ['state', 'nonce', 'code_challenge']) expect(asked[name]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(asked.state).not.toBe(asked.nonce);
    expect(callback.searchParams.get('state')).toBe(asked.state);

    const back = await browser.fetch(callback);
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(`${publicUrl}/`);
    const setCookie = browser.setCookies.filter((header) => header.startsWith('censo-sessao='));
    expect(setCookie).toHaveLength(1);
    const attributes = setCookie[0]!.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/']));
    // PUBLIC_URL is http here: no Secure (signin-sessions.test.ts checks the https case), and no
    // Domain, so the cookie goes to this host only.
    expect(attributes.some((a) => a === 'secure' || a.startsWith('domain='))).toBe(false);

    const sessao = await browser.fetch(`${publicUrl}/auth/sessao`);
    expect(sessao.status).toBe(200);
    // Name and email came from userinfo: this provider keeps them out of the ID token.
    expect(json(sessao)).toEqual({ nome: 'Ana Lima', email: 'ana@seduc.example', permissoes: ['retorno', 'consulta'] });
    expect(sessao.headers.get('x-csrf-token')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sessao.headers.get('cache-control')).toBe('no-store');
  });

  it('gives a new session id at each sign-in, and the one before stops working', async () => {
    const { browser } = await signedIn('ana');
    const first = sessionCookie(browser)!;
    await signIn(browser, publicUrl, 'ana');
    const second = sessionCookie(browser)!;
    expect(second).not.toBe(first);
    const old = new TestBrowser();
    old.setCookie(publicUrl, 'censo-sessao', first);
    expect((await old.fetch(`${publicUrl}/auth/sessao`)).status).toBe(401);
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(200);
  });

  it('refuses a callback whose state was changed, and a state used twice', async () => {
    const browser = new TestBrowser();
    const { callback } = await signInUntilCallback(browser, publicUrl, 'ana');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', randomBytes(32).toString('base64url'));
    const refused = await browser.fetch(tampered);
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(refused.body).toContain('Não foi possível entrar');
    expect(sessionCookie(browser)).toBeUndefined();

    // The genuine answer still completes once, and only once.
    expect((await browser.fetch(callback)).status).toBe(303);
    expect(sessionCookie(browser)).toBeDefined();
    const replay = new TestBrowser();
    expect((await replay.fetch(callback)).status).toBe(400);
    expect((await browser.fetch(callback)).status).toBe(400);
  });

  it('refuses a callback in a browser that did not start the sign-in (login CSRF)', async () => {
    const attacker = new TestBrowser();
    const { callback } = await signInUntilCallback(attacker, publicUrl, 'davi');
    const victim = new TestBrowser();
    const answer = await victim.fetch(callback);
    expect(answer.status).toBe(400);
    expect(sessionCookie(victim)).toBeUndefined();
  });

  it('refuses an ID token whose nonce is not the one it asked for', async () => {
    const browser = new TestBrowser();
    const { callback } = await signInUntilCallback(browser, publicUrl, 'ana', replacing('nonce', randomBytes(32).toString('base64url')));
    const answer = await browser.fetch(callback);
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('A resposta do provedor de identidade não pôde ser validada.');
    expect(sessionCookie(browser)).toBeUndefined();
  });

  it('refuses a code issued for another PKCE challenge', async () => {
    const other = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const browser = new TestBrowser();
    const { callback } = await signInUntilCallback(browser, publicUrl, 'ana', replacing('code_challenge', other));
    const answer = await browser.fetch(callback);
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('A resposta do provedor de identidade não pôde ser validada.');
    expect(sessionCookie(browser)).toBeUndefined();
  });

  it('keeps the pending sign-ins of one browser in one small cookie: 60 unfinished, then one that completes', async () => {
    const browser = new TestBrowser();
    // Before, each /auth/login added a cookie of its own; about 50 of them and the callback's
    // Cookie header passed Node's 16 KiB limit: 431 for every sign-in in that browser (issue 33).
    for (let i = 0; i < 59; i++) expect((await browser.fetch(`${publicUrl}/auth/login`)).status).toBe(302);
    const { callback } = await signInUntilCallback(browser, publicUrl, 'ana');
    const back = await browser.fetch(callback);
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(`${publicUrl}/`);
    // One cookie held them all, and stayed small.
    const pending = browser.setCookies.filter((header) => header.startsWith('censo-entrada'));
    expect(new Set(pending.map((header) => header.split('=')[0]))).toEqual(new Set(['censo-entrada']));
    expect(Math.max(...pending.map((header) => header.length))).toBeLessThan(1024);
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(200);
  });

  it('completes sign-ins started in two tabs of one browser, each once', async () => {
    const browser = new TestBrowser();
    const first = await signInUntilCallback(browser, publicUrl, 'ana');
    const second = await signInUntilCallback(browser, publicUrl, 'ana');
    expect(first.callback.searchParams.get('state')).not.toBe(second.callback.searchParams.get('state'));
    expect((await browser.fetch(first.callback)).status).toBe(303);
    const afterFirst = sessionCookie(browser);
    expect((await browser.fetch(second.callback)).status).toBe(303);
    expect(sessionCookie(browser)).not.toBe(afterFirst);
    // Each was taken out of the cookie when it completed: the last one took the cookie with it.
    expect(browser.cookie(publicUrl, 'censo-entrada')).toBeUndefined();
    expect((await browser.fetch(first.callback)).status).toBe(400);
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(200);
  });

  it('says so in words when the provider refuses (the person cancelled)', async () => {
    const browser = new TestBrowser();
    const leaving = await browser.fetch(`${publicUrl}/auth/login`);
    const state = new URL(leaving.headers.get('location')!).searchParams.get('state')!;
    const query = new URLSearchParams({ error: 'access_denied', state, iss: provider.issuer });
    const answer = await browser.fetch(`${publicUrl}/auth/callback?${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('O provedor de identidade não concluiu a entrada (acesso recusado ou cancelado).');
    expect(answer.body).toContain(`href="${publicUrl}/auth/login"`);
  });
});

describe('/api/* with a staff session', () => {
  it('answers 401 exactly as §4 with neither key nor session, and never redirects', async () => {
    const anonymous = new TestBrowser();
    anonymous.setCookie(publicUrl, 'censo-sessao', randomBytes(32).toString('base64url'));
    for (const visit of [
      await uploadDivergencias(new TestBrowser()),
      await uploadDivergencias(anonymous),
      await new TestBrowser().fetch(`${publicUrl}/api/query`),
      await anonymous.fetch(`${publicUrl}/api/query?query=audits`),
    ]) {
      expect(visit.status).toBe(401);
      expect(json(visit)).toEqual(CREDENTIAL_401);
      expect(visit.headers.get('location')).toBeNull();
    }
  });

  it('lets a session with the permission in, with the CSRF token on POST (403 without it)', async () => {
    const { browser, csrf } = await signedIn('ana');
    const attempts: Record<string, string>[] = [{}, { 'x-csrf-token': randomBytes(32).toString('base64url') }, { 'x-csrf-token': '' }];
    for (const headers of attempts) {
      const refused = await uploadDivergencias(browser, headers);
      expect(refused.status).toBe(403);
      expect(json(refused)).toEqual({ erro: 'Token CSRF inválido.' });
    }
    const done = await uploadDivergencias(browser, { 'x-csrf-token': csrf });
    expect(done.status).toBe(200);
    expect(json(done)).toEqual(basico.expectedDivergencias);
    // A GET changes nothing: no token needed.
    const listing = await browser.fetch(`${publicUrl}/api/query`);
    expect(listing.status).toBe(200);
    expect((json(listing) as { queries: { name: string }[] }).queries.map((q) => q.name)).toContain('audits');
  });

  it('answers 403 Permissão insuficiente to a session without the route’s permission', async () => {
    const consulta = await signedIn('bia');
    const upload = await uploadDivergencias(consulta.browser, { 'x-csrf-token': consulta.csrf });
    expect(upload.status).toBe(403);
    expect(json(upload)).toEqual({ erro: 'Permissão insuficiente.' });
    expect((await consulta.browser.fetch(`${publicUrl}/api/query`)).status).toBe(200);

    const retorno = await signedIn('caio');
    const query = await retorno.browser.fetch(`${publicUrl}/api/query`);
    expect(query.status).toBe(403);
    expect(json(query)).toEqual({ erro: 'Permissão insuficiente.' });
  });

  it('is in the OpenAPI document: the session cookie scheme and the 403s', async () => {
    const doc = json(await new TestBrowser().fetch(`${publicUrl}/docs/json`)) as {
      components: { securitySchemes: Record<string, unknown> };
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    expect(doc.components.securitySchemes.sessao).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'censo-sessao' });
    expect(doc.paths['/api/divergencias-rf']!.post!.responses['403']!.description).toContain('`Token CSRF inválido.`');
    expect(doc.paths['/api/query']!.get!.responses['403']!.description).toContain('`Permissão insuficiente.`');
  });

  it('judges a request with x-api-key by the key alone, session or not', async () => {
    const { browser, csrf } = await signedIn('ana');
    const wrongKey = await uploadDivergencias(browser, { 'x-api-key': 'chave-errada', 'x-csrf-token': csrf });
    expect(wrongKey.status).toBe(401);
    expect(json(wrongKey)).toEqual(CREDENTIAL_401);
    const emptyKey = await uploadDivergencias(browser, { 'x-api-key': '', 'x-csrf-token': csrf });
    expect(emptyKey.status).toBe(401);
    // A key needs no CSRF token and no session: integrations are unchanged.
    const byKey = await uploadDivergencias(new TestBrowser(), { 'x-api-key': KEYS[1]! });
    expect(byKey.status).toBe(200);
    expect(json(byKey)).toEqual(basico.expectedDivergencias);
  });

  it('default deny: a person whose groups grant nothing gets a page that says so, and 403 from the API', async () => {
    const browser = new TestBrowser();
    const { callback } = await signInUntilCallback(browser, publicUrl, 'davi');
    const back = await browser.fetch(callback);
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(`${publicUrl}/auth/negado`);
    const denied = await browser.follow(back.headers.get('location')!);
    expect(denied.status).toBe(403);
    expect(denied.headers.get('content-type')).toMatch(/^text\/html; charset=utf-8/);
    expect(denied.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(denied.body).toContain('Acesso negado');
    expect(denied.body).toContain('Você entrou como <strong>Davi Melo</strong>, mas sua conta não tem permissão para usar este serviço.');
    expect(denied.body).toMatch(/<button type="submit">Sair<\/button>/);

    const sessao = await browser.fetch(`${publicUrl}/auth/sessao`);
    expect(json(sessao)).toEqual({ nome: 'Davi Melo', email: 'davi@seduc.example', permissoes: [] });
    const csrf = sessao.headers.get('x-csrf-token')!;
    const upload = await uploadDivergencias(browser, { 'x-csrf-token': csrf });
    expect(upload.status).toBe(403);
    expect(json(upload)).toEqual({ erro: 'Permissão insuficiente.' });
    const query = await browser.fetch(`${publicUrl}/api/query`);
    expect(json(query)).toEqual({ erro: 'Permissão insuficiente.' });

    // Its Sair form signs out (the field carries the CSRF token).
    const out = await browser.submit(denied, '/auth/logout', {}, () => true);
    expect(out.status).toBe(303);
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(401);
  });
});

describe('signing out', () => {
  it('needs the CSRF token, ends the session, and sends the person to end the provider’s session too', async () => {
    const { browser, csrf } = await signedIn('ana');
    const cookie = sessionCookie(browser)!;

    const forged = await browser.fetch(`${publicUrl}/auth/logout`, { method: 'POST' });
    expect(forged.status).toBe(403);
    expect(json(forged)).toEqual({ erro: 'Token CSRF inválido.' });
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(200);

    const out = await browser.fetch(`${publicUrl}/auth/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf }).toString(),
    });
    expect(out.status).toBe(303);
    const endSession = new URL(out.headers.get('location')!);
    expect(`${endSession.origin}${endSession.pathname}`).toBe(`${provider.issuer}/session/end`);
    expect(endSession.searchParams.get('post_logout_redirect_uri')).toBe(`${publicUrl}/`);
    expect(endSession.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(endSession.searchParams.get('id_token_hint')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    // Gone here: the cookie is cleared, and the old value opens nothing any more.
    expect(sessionCookie(browser)).toBeUndefined();
    const sessao = await browser.fetch(`${publicUrl}/auth/sessao`);
    expect(sessao.status).toBe(401);
    expect(json(sessao)).toEqual({ erro: 'Nenhuma sessão ativa: entre com sua conta.' });
    const replay = new TestBrowser();
    replay.setCookie(publicUrl, 'censo-sessao', cookie);
    expect((await replay.fetch(`${publicUrl}/api/query`)).status).toBe(401);

    // And at the provider: its confirmation, then back to the page; the next sign-in asks again.
    const confirm = await browser.follow(endSession);
    const home = await browser.submit(confirm, '/session/end/confirm', { logout: 'yes' });
    expect(home.url.href).toBe(`${publicUrl}/`);
    expect(home.status).toBe(200);
    const again = await browser.follow(`${publicUrl}/auth/login`);
    expect(again.url.origin).toBe(provider.issuer);
    expect(again.body).toMatch(/name="login"/);
  });

  // SameSite=Lax keeps the session cookie off a POST from another site's page: what reaches the
  // service is a logout with no cookie (and no token, which that page cannot read).
  it('from another site (no session cookie) changes nothing: no cookie cleared, no provider logout', async () => {
    const { browser } = await signedIn('ana');
    const crossSite: Record<string, string>[] = [
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://outro-site.example' },
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' },
      { accept: 'application/json', origin: 'https://outro-site.example' },
    ];
    for (const headers of crossSite) {
      const forged = await fetch(`${publicUrl}/auth/logout`, { method: 'POST', headers, body: 'csrf=adivinhado', redirect: 'manual' });
      // A browser applies the Set-Cookie of a top-level answer even cross-site: there must be none.
      expect(forged.headers.getSetCookie()).toEqual([]);
      expect(forged.headers.get('cache-control')).toBe('no-store');
      if (headers.accept === 'application/json') {
        expect(forged.status).toBe(200);
        expect(await forged.json()).toEqual({ redirecionar: `${publicUrl}/` });
      } else {
        // Home, not the provider's end_session_endpoint (that would end the provider's session).
        expect(forged.status).toBe(303);
        expect(forged.headers.get('location')).toBe(`${publicUrl}/`);
      }
    }
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(200);
  });

  it('with the session cookie but a wrong or missing token field: 403, and the session goes on', async () => {
    const { browser } = await signedIn('bia');
    for (const body of ['', 'csrf=', `csrf=${randomBytes(32).toString('base64url')}`]) {
      const forged = await browser.fetch(`${publicUrl}/auth/logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      expect(forged.status).toBe(403);
      expect(json(forged)).toEqual({ erro: 'Token CSRF inválido.' });
      expect(forged.headers.getSetCookie()).toEqual([]);
    }
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(200);
  });

  it('answers the page’s fetch with the address to go to', async () => {
    const { browser, csrf } = await signedIn('bia');
    const out = await browser.fetch(`${publicUrl}/auth/logout`, {
      method: 'POST',
      headers: { 'x-csrf-token': csrf, accept: 'application/json' },
    });
    expect(out.status).toBe(200);
    const { redirecionar } = json(out) as { redirecionar: string };
    expect(redirecionar.startsWith(`${provider.issuer}/session/end?`)).toBe(true);
    expect((await browser.fetch(`${publicUrl}/auth/sessao`)).status).toBe(401);
  });
});

describe('the key mode, without OIDC_ISSUER', () => {
  it('has no sign-in routes, says so to the page, and takes x-api-key exactly as before', async () => {
    const client = new TestBrowser();
    for (const route of ['/auth/login', '/auth/callback', '/auth/negado'])
      expect((await client.fetch(`${keyOnly.url}${route}`)).status).toBe(404);
    expect((await client.fetch(`${keyOnly.url}/auth/logout`, { method: 'POST' })).status).toBe(404);
    const sessao = await client.fetch(`${keyOnly.url}/auth/sessao`);
    expect(sessao.status).toBe(204);
    expect(sessao.body).toBe('');
    const body = () => formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);
    const none = await client.fetch(`${keyOnly.url}/api/divergencias-rf`, { method: 'POST', body: await body() });
    expect(none.status).toBe(401);
    expect(json(none)).toEqual(CREDENTIAL_401);
    const ok = await client.fetch(`${keyOnly.url}/api/divergencias-rf`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS[0]! },
      body: await body(),
    });
    expect(ok.status).toBe(200);
    expect(json(ok)).toEqual(basico.expectedDivergencias);
  });
});

describe('the access log (SPEC §8)', () => {
  const lineOf = (requestId: string): Promise<AccessLine> => accessLineOf(accessLog, requestId);

  it('writes who, when, the route, the outcome, counts, file digests and the query name, and nothing personal from the files', async () => {
    const { browser, csrf } = await signedIn('ana');
    const retornoBytes = await readFile(basico.retorno.json);
    const txtBytes = await readFile(basico.txt);
    const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

    const upload = await uploadDivergencias(browser, { 'x-csrf-token': csrf });
    expect(upload.status).toBe(200);
    const byPerson = await lineOf(upload.headers.get('x-request-id')!);
    expect(byPerson).toEqual({
      log: 'access',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      sub: 'ana',
      email: 'ana@seduc.example',
      // Straight from the socket: no TRUST_PROXY here (proxy-trust.test.ts has the proxy's case).
      ip: '127.0.0.1',
      requestId: upload.headers.get('x-request-id'),
      method: 'POST',
      route: '/api/divergencias-rf',
      status: 200,
      outcome: 'ok',
      count: divergencias.length,
      files: [{ field: 'retorno', sha256: digest(retornoBytes), bytes: retornoBytes.length }],
    });

    const form = await formWith([
      { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' },
      { field: 'txt', path: basico.txt, filename: 'censo.txt' },
    ]);
    const byKey = await new TestBrowser().fetch(`${publicUrl}/api/retorno-rf`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS[1]! },
      body: form,
    });
    expect(byKey.status).toBe(200);
    const keyLine = await lineOf(byKey.headers.get('x-request-id')!);
    expect(keyLine).toMatchObject({ chave: 1, route: '/api/retorno-rf', status: 200, count: pessoas.length });
    expect(keyLine).not.toHaveProperty('sub');
    expect(keyLine.files).toEqual([
      { field: 'retorno', sha256: digest(retornoBytes), bytes: retornoBytes.length },
      { field: 'txt', sha256: digest(txtBytes), bytes: txtBytes.length },
    ]);

    const filterValue = 'acao-que-nao-vai-ao-log';
    const query = await browser.fetch(`${publicUrl}/api/query?query=audits&action=${filterValue}`);
    expect(query.status).toBe(200);
    expect(await lineOf(query.headers.get('x-request-id')!)).toMatchObject({
      sub: 'ana',
      route: '/api/query',
      status: 200,
      query: 'audits',
      format: 'json',
      rows: 0,
    });

    const denied = await signedIn('caio');
    const refused = await denied.browser.fetch(`${publicUrl}/api/query?query=audits`);
    expect(await lineOf(refused.headers.get('x-request-id')!)).toMatchObject({ sub: 'caio', route: '/api/query', status: 403 });

    const text = await readFile(accessLog, 'utf8');
    const secrets = [
      ...KEYS,
      csrf,
      sessionCookie(browser)!,
      filterValue,
      ...pessoas.flatMap((p) => [p.cpf, p.nome, p.nome_mae]),
      ...divergencias.flatMap((d) => [d.enviado, d.correto]).filter((value) => String(value).length >= 5),
    ].map(String);
    for (const secret of secrets) expect(text, secret).not.toContain(secret);
  });
});
