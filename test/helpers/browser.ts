// The staff page in Debian's Chromium, driven by playwright-core (never a downloaded browser):
// the launch, a fresh context per test, and the few steps every page test takes.
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
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

/** One row of a return (JSON) in which the tax authority says `conteudo` (`<sent> -- <correct>`) of `campo`. */
export function retornoRow(codigo: string, linha: string, campo: string, conteudo: string): Record<string, string> {
  return {
    Registro: '30',
    Linha: linha,
    'Código na Escola': codigo,
    Campo: campo,
    Mensagem: 'O campo não está de acordo com a base da Receita Federal.',
    Conteúdo: conteudo,
  };
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

/** axe-core's browser bundle, from the test workspace (never served by the service). */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
let axeSource: Promise<string> | null = null;

/**
 * axe-core's violations of impact serious or critical on the page as it is now (WCAG 2.1 A and
 * AA rules, which eMAG 3.1 follows), one line each: rule, impact and the elements. The bundle is
 * evaluated through the DevTools protocol, so the page's CSP ('self', no inline script) stays
 * exactly as the service sends it.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  axeSource ??= readFile(AXE, 'utf8');
  if (!(await page.evaluate<boolean>("typeof window.axe === 'object'"))) await page.evaluate(await axeSource);
  return page.evaluate<string[]>(`axe
    .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
    .then((result) => result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.id + ' (' + v.impact + '): ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`);
}

/** Whether the page itself scrolls sideways (a table or chart scrolling inside its own box does not count). */
export const scrollsSideways = (page: Page) =>
  page.evaluate<boolean>('document.documentElement.scrollWidth > document.documentElement.clientWidth');

/**
 * axe-core at 1280 and at 390 px wide: no violation of impact serious or critical, and no
 * sideways scrolling on the phone. The viewport is 1280 px again afterwards.
 */
export async function expectAccessible(page: Page, view: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    expect(await axeViolations(page), `${view}, ${width} px`).toEqual([]);
    if (width === 390) expect(await scrollsSideways(page), `${view}, ${width} px`).toBe(false);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
