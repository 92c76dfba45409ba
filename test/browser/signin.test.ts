// Staff sign-in on the page (SPEC §3.6, §8) in a real Chromium (Debian's, through playwright-core):
// the page offers "Entrar" instead of the key field, the person signs in on the provider's own
// login form (oidc-provider, in this process), comes back to the page that says who is signed in,
// uploads a return whose divergences show as the table, with the session cookie and the CSRF token
// and never a key, and signs out through the provider's logout.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, screenshotsDir } from '../helpers/browser.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { startTestServer, type TestServer } from '../helpers/http.js';
import { OP_HOST, signInEnv, startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/ports.js';
import { onThisMachine } from '../helpers/deadline.js';

const CHROMIUM = '/usr/bin/chromium';
let SHOTS: string;
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const divergencias = (basico.expectedDivergencias as { divergencias: Record<string, unknown>[] }).divergencias;

let browser: Browser;
let provider: TestProvider;
let server: TestServer;
let publicUrl: string;

beforeAll(async () => {
  // Never skipped: a machine without Chromium fails here with the reason.
  expect(existsSync(CHROMIUM), 'install Debian chromium (.ci/run does)').toBe(true);
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  provider = await startTestProvider([publicUrl], {
    ana: { name: 'Ana Lima', email: 'ana@seduc.example', groups: ['censo-retorno', 'censo-consulta'] },
    davi: { name: 'Davi Melo', email: 'davi@seduc.example', groups: [] },
  });
  server = await startTestServer({ PORT: String(port), ...signInEnv(provider, publicUrl) });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
  SHOTS = await screenshotsDir();
}, onThisMachine(60_000));

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await provider?.close();
});

/** A context that reaches only this machine: the provider's development pages link a web font, which never loads here. */
async function localContext() {
  const context = await browser.newContext();
  const local = new RegExp(`^http://(127\\.0\\.0\\.1|${OP_HOST.replace(/\./g, '\\.')}):`);
  await context.route(
    (url) => !local.test(url.href),
    (route) => route.abort(),
  );
  return context;
}

/** From the page's "Entrar" through the provider's login form and consent, as `login`. */
async function signInOnPage(page: Page, login: string) {
  await page.goto(publicUrl);
  await page.getByRole('link', { name: 'Entrar' }).click();
  await page.waitForURL(new RegExp(`^${provider.issuer}/interaction/`));
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('qualquer');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

describe('the staff page with sign-in', () => {
  it('signs in on the provider’s form, uploads a return with the session, and signs out', async () => {
    const context = await localContext();
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(err.message));
    const apiCalls: Record<string, string>[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.startsWith('/api/')) apiCalls.push(request.headers());
    });

    await page.goto(publicUrl);
    const enter = page.getByRole('link', { name: 'Entrar' });
    await enter.waitFor();
    expect(await page.getByLabel('Chave de acesso (x-api-key)').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Ver divergências' }).isVisible()).toBe(false);
    await page.screenshot({ path: path.join(SHOTS, 'entrar.png') });
    await expectAccessible(page, 'entrar');

    await signInOnPage(page, 'ana');
    await page.waitForURL(`${publicUrl}/`);

    await page.getByRole('button', { name: 'Sair' }).waitFor();
    expect(await page.locator('#sessao').textContent()).toBe('Conectado como Ana Lima (ana@seduc.example)Sair');
    expect(await page.getByLabel('Chave de acesso (x-api-key)').isVisible()).toBe(false);
    await page.screenshot({ path: path.join(SHOTS, 'conectado.png') });
    await expectAccessible(page, 'conectado');
    // The session lives in an HttpOnly cookie: nothing of it is readable by the page's scripts.
    expect(await page.evaluate('document.cookie')).toBe('');

    await page.getByLabel('Arquivo de retorno (.json ou .xlsx)').first().setInputFiles(basico.retorno.json);
    await page.getByRole('button', { name: 'Ver divergências' }).click();
    await page.locator('#tabela-divergencias tbody tr').first().waitFor();
    expect(await page.locator('#tabela-divergencias tbody tr').count()).toBe(divergencias.length);
    const upload = apiCalls.find((headers) => headers['x-csrf-token'] !== undefined);
    expect(upload?.['x-csrf-token']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(apiCalls.every((headers) => headers['x-api-key'] === undefined)).toBe(true);
    // The same session cookie on a POST without the page's token (a forged cross-site form): refused.
    const forged = await context.request.post(`${publicUrl}/api/divergencias-rf`, {
      multipart: { retorno: { name: 'retorno.json', mimeType: 'application/json', buffer: await readFile(basico.retorno.json) } },
    });
    expect([forged.status(), await forged.json()]).toEqual([403, { erro: 'Token CSRF inválido.' }]);

    // Deleting what one sent (LGPD, issue 50) carries the page's token too, and clears the result.
    const deleted = page.waitForRequest((r) => r.method() === 'DELETE');
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Apagar do serviço' }).click();
    const deletion = await deleted;
    expect(deletion.headers()['x-csrf-token']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(deletion.headers()['x-api-key']).toBeUndefined();
    expect((await deletion.response())?.status()).toBe(204);
    await expect.poll(() => page.locator('#resultado-divergencias').isHidden()).toBe(true);
    expect(await page.locator('#tabela-divergencias tbody tr').count()).toBe(0);
    expect((await context.request.get(new URL(deletion.url()).href)).status()).toBe(404);

    await page.getByRole('button', { name: 'Sair' }).click();
    await page.waitForURL(new RegExp(`^${provider.issuer}/session/end`));
    await page.getByRole('button', { name: /sign me out/i }).click();
    await page.waitForURL(`${publicUrl}/`);
    await page.getByRole('link', { name: 'Entrar' }).waitFor();
    expect(pageErrors).toEqual([]);
    await context.close();
  });

  it('default deny: a person whose groups grant nothing is told so, uses nothing, and can sign out', async () => {
    const context = await localContext();
    const page = await context.newPage();
    await signInOnPage(page, 'davi');
    await page.waitForURL(`${publicUrl}/auth/negado`);
    expect(await page.getByRole('heading', { name: 'Acesso negado' }).count()).toBe(1);
    expect(await page.locator('body').textContent()).toContain(
      'Você entrou como Davi Melo, mas sua conta não tem permissão para usar este serviço.',
    );
    // The API refuses the session too (the browser's own cookies; this page's CSP allows no fetch).
    const api = await context.request.get(`${publicUrl}/api/query`);
    expect([api.status(), await api.json()]).toEqual([403, { erro: 'Permissão insuficiente.' }]);
    await page.getByRole('button', { name: 'Sair' }).click();
    await page.waitForURL(new RegExp(`^${provider.issuer}/session/end`));
    await context.close();
  });
});
