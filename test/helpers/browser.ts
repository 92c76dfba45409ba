// The staff page in Debian's Chromium, driven by playwright-core (never a downloaded browser):
// the launch, a fresh context per test, and the few steps every page test takes.
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { API_KEY } from './http.js';

const CHROMIUM = '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  // Never skipped: a machine without Chromium fails here with the reason.
  expect(existsSync(CHROMIUM), 'install Debian chromium (.ci/run does)').toBe(true);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** The page in a context of its own; console errors and uncaught exceptions go to `consoleErrors`. */
export async function openPage(browser: Browser, url: string, consoleErrors: string[]): Promise<Page> {
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (err) => consoleErrors.push(err.message));
  await page.goto(url);
  return page;
}

export async function enterKey(page: Page, value = API_KEY): Promise<void> {
  await page.getByLabel('Chave de acesso (x-api-key)').fill(value);
  await page.getByRole('button', { name: 'Entrar' }).click();
}

/** The visible table's body as arrays of cell texts. */
export async function tableRows(page: Page, container: string): Promise<string[][]> {
  return page
    .locator(`#${container} tbody tr`)
    .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent ?? '')));
}

/** The file the browser downloads after `click`, saved under `dir`. */
export async function downloaded(page: Page, dir: string, click: () => Promise<void>): Promise<{ name: string; bytes: Buffer }> {
  const [download] = await Promise.all([page.waitForEvent('download'), click()]);
  const target = path.join(dir, download.suggestedFilename());
  await download.saveAs(target);
  return { name: download.suggestedFilename(), bytes: await readFile(target) };
}

/**
 * Where the page tests save their screenshots: test/browser/.screenshots (not committed), or
 * SCREENSHOTS_DIR when set. `SCREENSHOTS_DIR=docs/screenshots npx vitest run test/browser`
 * refreshes the ones the README shows.
 */
export async function screenshotsDir(): Promise<string> {
  const dir = process.env.SCREENSHOTS_DIR
    ? path.resolve(process.env.SCREENSHOTS_DIR)
    : fileURLToPath(new URL('../browser/.screenshots/', import.meta.url));
  await mkdir(dir, { recursive: true });
  return dir;
}

/** A second school's return (JSON rows): one divergence, so its answer can never be school A's. */
export const RETORNO_ESCOLA_B = [
  {
    Registro: '30',
    Linha: '2',
    'Código na Escola': 'BVX0001',
    Campo: 'Nome completo',
    Mensagem: 'O campo não está de acordo com a base da Receita Federal.',
    Conteúdo: 'PEDRO ALVES -- PEDRO ALVES DA SILVA',
  },
];
