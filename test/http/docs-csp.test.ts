// GET /docs (the OpenAPI UI, SPEC §6) under the staff page's own security headers: no site may
// frame it (clickjacking a page that holds a key field), and it runs only the service's own
// scripts and styles. Then a real Chromium renders it under that policy without a violation.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/http.js';
import { onThisMachine } from '../helpers/deadline.js';

const CHROMIUM = '/usr/bin/chromium';

let server: TestServer;
let browser: Browser;
beforeAll(async () => {
  expect(existsSync(CHROMIUM), 'install Debian chromium (.ci/run does)').toBe(true);
  server = await startTestServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
    ],
  });
}, onThisMachine(60_000));
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
});

/** The CSP's directives by name, each with its sorted sources. */
function directives(csp: string): Record<string, string[]> {
  return Object.fromEntries(
    csp
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...sources]) => [name, sources.sort()]),
  );
}

describe('GET /docs', () => {
  it.each(['/docs', '/docs/', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui-bundle.js', '/docs/json'])(
    '%s carries the page CSP: no framing, only its own scripts and styles',
    async (route) => {
      const page = await fetch(`${server.url}/`);
      const pageCsp = page.headers.get('content-security-policy') ?? '';
      await page.arrayBuffer();
      const response = await fetch(`${server.url}${route}`);
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(directives(csp)).toEqual(directives(pageCsp));
      expect(directives(csp)).toMatchObject({
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        'style-src': ["'self'"],
        'frame-ancestors': ["'none'"],
      });
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https:/);
      // Browsers without CSP level 2 still honour this one.
      expect(response.headers.get('x-frame-options')).toMatch(/^(DENY|SAMEORIGIN)$/);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    },
  );

  it(
    'still renders every operation in Chromium under that policy, with no CSP violation',
    async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(message.text());
      });
      page.on('pageerror', (err) => problems.push(err.message));
      await page.goto(`${server.url}/docs`);
      await page
        .locator('.opblock-summary-path')
        .first()
        .waitFor({ timeout: onThisMachine(20_000) });
      const paths = await page.locator('.opblock-summary-path').allTextContents();
      expect(paths.map((p) => p.replace(/\u200b/g, ''))).toEqual(
        expect.arrayContaining(['/api/divergencias-rf', '/api/retorno-rf', '/api/censo-corrigido', '/api/query', '/healthz']),
      );
      // Swagger UI's own styles applied (its stylesheet is served by the service itself).
      const display = await page.evaluate("getComputedStyle(document.querySelector('.opblock-summary')).display");
      expect(display).toBe('flex');
      expect(problems).toEqual([]);
      await context.close();
    },
    onThisMachine(60_000),
  );
});
