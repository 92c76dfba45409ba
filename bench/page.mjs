/* global window -- page.evaluate callbacks run in the page */
// The staff page with a large return (issue 25): time from "Ver divergências" to the first table
// page in Debian's Chromium, and how long the tab's main thread was blocked meanwhile (long
// tasks), for the page as it was at BEFORE (a git revision) and as it is now, alternated in one
// run against the same service. Prints one line per run and the medians.
//   node bench/page.mjs [--before <rev>] [--runs 3] [--persons 100000]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { loadConfig } from '@censo/shared';
import { startServer } from '@censo/api';
import { generate } from './gen-big.mjs';
import { DATA, ROOT, median } from './lib.mjs';

const { values } = parseArgs({
  options: {
    before: { type: 'string', default: '0cdc54e' },
    runs: { type: 'string', default: '3' },
    persons: { type: 'string', default: '100000' },
  },
});
const API_KEY = 'bench-page-key';
const WEB = path.join(ROOT, 'services/api/web');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/** The page's files at `rev`, in a folder of their own. */
function webAt(rev) {
  const dir = path.join(DATA, `page-${rev}`);
  mkdirSync(dir, { recursive: true });
  const files = execFileSync('git', ['ls-tree', '--name-only', `${rev}:services/api/web`], { cwd: ROOT, encoding: 'utf8' })
    .trim()
    .split('\n');
  for (const file of files)
    writeFileSync(path.join(dir, file), execFileSync('git', ['show', `${rev}:services/api/web/${file}`], { cwd: ROOT }));
  return dir;
}

/** Serves `dir` as the page and forwards /api and /auth to the service. */
function pageServer(dir, service) {
  const upstream = new URL(service);
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/api/') || req.url.startsWith('/auth/')) {
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(forward);
      return;
    }
    const file = path.join(dir, req.url === '/' ? 'index.html' : req.url.slice(1).split('?')[0]);
    if (!file.startsWith(dir) || !existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() })),
  );
}

async function once(browser, url, retorno) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(url);
  await page.evaluate(() => {
    window.__blocked = [];
    new PerformanceObserver((list) => window.__blocked.push(...list.getEntries().map((e) => e.duration))).observe({
      type: 'longtask',
      buffered: true,
    });
  });
  await page.locator('#chave').fill(API_KEY);
  await page.locator('#entrar').click();
  await page.locator('#retorno-divergencias').setInputFiles(retorno);
  await page.evaluate(() => (window.__blocked.length = 0));
  // When the service's part ended: the synchronous answer's last byte (before), or the first
  // monitor that says concluida (after). What follows is the page's own part.
  let serviceDone = null;
  page.on('requestfinished', async (request) => {
    const at = Date.now();
    if (request.method() !== 'POST' || !request.url().endsWith('/api/divergencias-rf')) return;
    if ((await request.response())?.status() === 200) serviceDone ??= at;
  });
  page.on('response', async (response) => {
    if (!/\/api\/tarefas\/[^/]+$/.test(new URL(response.url()).pathname)) return;
    const monitor = await response.json().catch(() => null);
    if (monitor?.estado === 'concluida') serviceDone ??= Date.now();
  });
  const marks = {};
  page.on('response', async (response) => {
    if (response.url().includes('/resultado')) marks.resultHeaders ??= Date.now();
    if (process.env.BENCH_PAGE_MARKS && response.url().includes('/api/')) {
      const at = Date.now() - started;
      const body = response.url().includes('/resultado') ? '' : await response.text().catch(() => '');
      console.log(
        `  ${at} ms ${response.request().method()} ${new URL(response.url()).pathname} ${response.status()} ${/"estado":"(\w+)"/.exec(body)?.[1] ?? ''}`,
      );
    }
  });
  page.on('requestfinished', (request) => {
    if (request.url().includes('/resultado')) marks.resultEnd ??= Date.now();
  });
  const started = Date.now();
  await page.getByRole('button', { name: 'Ver divergências' }).click();
  await page.locator('#tabela-divergencias tbody tr').first().waitFor({ timeout: 180_000 });
  const shown = Date.now();
  const firstPageMs = shown - started;
  const blocked = await page.evaluate(() => window.__blocked);
  await context.close();
  if (process.env.BENCH_PAGE_MARKS) {
    const at = (t) => (t ? t - started : '-');
    console.log(
      `  service done ${at(serviceDone)}, result headers ${at(marks.resultHeaders)}, first row ${at(shown)}, result end ${at(marks.resultEnd)}`,
    );
  }
  return {
    firstPageMs,
    pageMs: shown - serviceDone,
    blockedMs: Math.round(blocked.reduce((a, b) => a + b, 0)),
    longestMs: Math.round(Math.max(0, ...blocked)),
  };
}

const big = path.join(DATA, `page-big-${values.persons}`);
const summary = await generate({ persons: Number(values.persons), perPerson: 3, out: big, formats: ['xlsx'] });
const uploadDir = path.join(os.tmpdir(), `censo-bench-page-${process.pid}`);
const service = await startServer(
  loadConfig({ API_KEY, HOST: '127.0.0.1', PORT: '0', UPLOAD_DIR: uploadDir, LOG_LEVEL: 'silent', ACCESS_LOG: '/dev/null' }),
  'all',
);
const pages = { before: await pageServer(webAt(values.before), service.url), after: await pageServer(WEB, service.url) };
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
const results = { before: [], after: [] };
try {
  console.log(`${summary.divergencias} divergences, ${(readFileSync(path.join(big, 'retorno.xlsx')).length / 1048576).toFixed(1)} MB xlsx`);
  for (let i = 0; i < Number(values.runs); i++) {
    for (const which of i % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
      const r = await once(browser, pages[which].url, path.join(big, 'retorno.xlsx'));
      results[which].push(r);
      console.log(
        `${which.padEnd(6)} first page ${r.firstPageMs} ms (the page's own part ${r.pageMs} ms), main thread blocked ${r.blockedMs} ms (longest ${r.longestMs} ms)`,
      );
    }
  }
  for (const which of ['before', 'after']) {
    const m = (k) => median(results[which].map((r) => r[k]));
    console.log(
      `median ${which.padEnd(6)} first page ${m('firstPageMs')} ms, page's part ${m('pageMs')} ms, blocked ${m('blockedMs')} ms, longest ${m('longestMs')} ms`,
    );
  }
} finally {
  await browser.close();
  pages.before.close();
  pages.after.close();
  await service.close();
}
