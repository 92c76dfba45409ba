/* global window, document, MutationObserver, requestAnimationFrame -- page.evaluate callbacks run in the page */
// Section 7 of `npm run bench`: the staff page with a large return, time from "Ver divergências"
// to the first table page in Debian's Chromium, and how long the tab's main thread was blocked
// meanwhile (long tasks), for the page as it was at BEFORE (a git revision) and as it is now,
// alternated in one run against the same service. Prints one line per run and the medians; with
// --json, the medians as one JSON line last (what run.mjs reads).
//   node bench/page.mjs [--before <rev>] [--runs 3] [--persons 100000] [--json]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { loadConfig } from '@censo/shared';
import { startServer } from '@censo/api';
import { BEFORE_REV } from './before.mjs';
import { generate } from './gen-big.mjs';
import { CHROMIUM, DATA, ROOT, median } from './lib.mjs';

const { values } = parseArgs({
  options: {
    before: { type: 'string', default: BEFORE_REV },
    runs: { type: 'string', default: '3' },
    persons: { type: 'string', default: '100000' },
    json: { type: 'boolean', default: false },
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

/**
 * The page's files from `dir`, served to a browser context at the service's own origin through
 * Playwright's routing, so the uploads and results go straight to the service, as they do from
 * the page it serves itself (a forwarding proxy in this process would sit in the upload's path
 * and share the service's event loop). `served` records what was answered, so a file the route
 * did not see (a worker's script fetched around it) is noticed instead of measuring the wrong page.
 */
function pageFiles(dir) {
  const served = new Set();
  return {
    served,
    async install(context, origin) {
      await context.route(
        (url) => url.origin === origin && !url.pathname.startsWith('/api/') && !url.pathname.startsWith('/auth/'),
        (route) => {
          const { pathname } = new URL(route.request().url());
          const file = path.join(dir, pathname === '/' ? 'index.html' : pathname.slice(1));
          if (!file.startsWith(dir) || !existsSync(file)) return route.fulfill({ status: 404 });
          served.add(path.basename(file));
          return route.fulfill({
            status: 200,
            contentType: TYPES[path.extname(file)] ?? 'application/octet-stream',
            body: readFileSync(file),
          });
        },
      );
    },
  };
}

/** The job of each task, as the service's executor saw it start and end (epoch ms). */
const jobs = new Map();

/**
 * One press of "Ver divergências", timed inside the page: from the button's click event to the
 * frame after the first table row is in the DOM (a MutationObserver, then a frame), so neither
 * Playwright's actionability checks before the click nor its polling of the table (up to 500 ms
 * between looks) count. Phases, all epoch ms: the upload (the POST's request start to its 202),
 * the job (the executor's own start and end; it starts before the 202 is sent), how late the page learned of the end (the last
 * monitor GET's response), and the page's own part after that.
 */
async function once(browser, files, url, retorno) {
  const context = await browser.newContext();
  await files.install(context, url);
  const page = await context.newPage();
  await page.goto(url);
  await page.evaluate(() => {
    window.__blocked = [];
    new PerformanceObserver((list) =>
      window.__blocked.push(...list.getEntries().map((e) => [performance.timeOrigin + e.startTime, e.duration])),
    ).observe({
      type: 'longtask',
      buffered: true,
    });
  });
  await page.locator('#chave').fill(API_KEY);
  await page.locator('#entrar').click();
  await page.locator('#retorno-divergencias').setInputFiles(retorno);
  let tarefa = null;
  page.on('response', async (response) => {
    if (response.request().method() === 'POST' && new URL(response.url()).pathname === '/api/divergencias-rf')
      tarefa = (await response.json().catch(() => null))?.id ?? null;
  });
  await page.evaluate(() => {
    window.__blocked.length = 0;
    const at = () => performance.timeOrigin + performance.now();
    window.__t = {};
    const button = [...document.querySelectorAll('#form-divergencias button')].find((b) => b.textContent.includes('Ver divergências'));
    button.addEventListener('click', () => (window.__t.click ??= at()), { capture: true });
    const table = document.getElementById('tabela-divergencias');
    new MutationObserver((_, observer) => {
      if (!table.querySelector('tbody tr')) return;
      observer.disconnect();
      window.__t.inDom = at();
      // On screen: the frame that shows it has been produced (a task queued from its rAF runs after it).
      requestAnimationFrame(() => setTimeout(() => (window.__t.shown = at())));
    }).observe(table, { childList: true, subtree: true });
  });
  await page.getByRole('button', { name: 'Ver divergências' }).click();
  await page.waitForFunction(() => window.__t.shown, null, { timeout: 180_000, polling: 1000 });
  const t = await page.evaluate(() => {
    const resources = performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname.startsWith('/api/'));
    const epoch = (ms) => performance.timeOrigin + ms;
    const post = resources.find((e) => new URL(e.name).pathname === '/api/divergencias-rf');
    const monitors = resources.filter((e) => /^\/api\/tarefas\/[^/]+$/.test(new URL(e.name).pathname));
    return {
      ...window.__t,
      postStart: post && epoch(post.requestStart || post.startTime),
      postEnd: post && epoch(post.responseEnd),
      learned: monitors.length ? epoch(monitors.at(-1).responseEnd) : null,
      looks: monitors.length,
      blocked: window.__blocked,
    };
  });
  await context.close();
  const job = jobs.get(tarefa) ?? {};
  const ms = (a, b) => (a && b ? Math.round(b - a) : NaN);
  return {
    firstPageMs: ms(t.click, t.shown),
    beforeUploadMs: ms(t.click, t.postStart),
    uploadMs: ms(t.postStart, t.postEnd),
    jobMs: ms(job.startedAt, job.finishedAt),
    lateMs: ms(job.finishedAt, t.learned),
    pageMs: ms(t.learned, t.shown),
    // The job's time moves with the machine's other work far more than the rest: the wait less
    // the job is what the page and the upload cost, and compares across runs.
    besideJobMs: ms(job.startedAt, job.finishedAt) >= 0 ? ms(t.click, t.shown) - ms(job.startedAt, job.finishedAt) : NaN,
    looks: t.looks,
    blockedMs: Math.round(t.blocked.reduce((sum, [, d]) => sum + d, 0)),
    longestMs: Math.round(Math.max(0, ...t.blocked.map(([, d]) => d))),
    // When the longest task began, after the click: which phase blocked the tab.
    longestAtMs: ms(t.click, t.blocked.reduce((a, b) => (b[1] > (a?.[1] ?? -1) ? b : a), null)?.[0]),
  };
}

const PHASES = [
  ['firstPageMs', 'first page'],
  ['beforeUploadMs', 'click to upload'],
  ['uploadMs', 'upload'],
  ['jobMs', 'job'],
  ['lateMs', 'end seen after'],
  ['pageMs', "page's own part"],
  ['besideJobMs', 'first page less the job'],
  ['looks', 'monitor looks'],
  ['blockedMs', 'main thread blocked'],
  ['longestMs', 'longest task'],
  ['longestAtMs', 'at'],
];
const line = (r) => PHASES.map(([k, label]) => `${label} ${r[k]}${k === 'looks' ? '' : ' ms'}`).join(', ');

const big = path.join(DATA, `page-big-${values.persons}`);
const summary = await generate({ persons: Number(values.persons), perPerson: 3, out: big, formats: ['xlsx'] });
const xlsxBytes = statSync(path.join(big, 'retorno.xlsx')).size;
const uploadDir = path.join(os.tmpdir(), `censo-bench-page-${process.pid}`);
const service = await startServer(
  loadConfig({ API_KEY, HOST: '127.0.0.1', PORT: '0', UPLOAD_DIR: uploadDir, LOG_LEVEL: 'silent', ACCESS_LOG: '/dev/null' }),
  'all',
);
// The executor's own view of each job: when it started and ended, whatever the page saw.
const { execution } = service.app.tarefas.service;
execution.onSettled(
  (id) => void execution.inspect(id).then((o) => o.state === 'done' && jobs.set(id, { startedAt: o.startedAt, finishedAt: o.finishedAt })),
);
const pages = { before: pageFiles(webAt(values.before)), after: pageFiles(WEB) };
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
const results = { before: [], after: [] };
try {
  console.log(`${summary.divergencias} divergences, ${(xlsxBytes / 1048576).toFixed(1)} MB xlsx`);
  for (let i = 0; i < Number(values.runs); i++) {
    for (const which of i % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
      const r = await once(browser, pages[which], service.url, path.join(big, 'retorno.xlsx'));
      if (!pages[which].served.has('table-worker.js')) throw new Error(`the ${which} page's worker script was not served by the route`);
      results[which].push(r);
      console.log(`${which.padEnd(6)} ${line(r)}`);
    }
  }
  const medians = {};
  for (const which of ['before', 'after']) {
    medians[which] = Object.fromEntries(PHASES.map(([k]) => [k, median(results[which].map((r) => r[k]))]));
    console.log(`median ${which.padEnd(6)} ${line(medians[which])}`);
  }
  if (values.json) {
    console.log(
      JSON.stringify({
        before: values.before,
        runs: Number(values.runs),
        divergencias: summary.divergencias,
        xlsxBytes,
        medians,
        firstPages: { after: results.after.map((r) => r.firstPageMs), before: results.before.map((r) => r.firstPageMs) },
      }),
    );
  }
} finally {
  await browser.close();
  await service.close();
  // The tasks' files stay for RESULT_TTL_HOURS in a service that goes on; this one is gone.
  rmSync(uploadDir, { recursive: true, force: true });
}
