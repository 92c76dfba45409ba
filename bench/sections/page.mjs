// Section 7: the staff page's first screen of a large result, in Chromium (bench/page.mjs).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { CHROMIUM, fmt, runNodeJson, table } from '../lib.mjs';
import { MiB } from './report.mjs';

export async function pageSection({ log, section, target, measure, RUNS }) {
  log("\nThe staff page's first screen (Chromium)...");
  const page = await measure(existsSync(CHROMIUM), 'page', () =>
    runNodeJson([path.join('bench', 'page.mjs'), '--json', '--runs', String(RUNS)], { timeoutMs: 900_000 }),
  );
  if (page) {
    const PAGE_PHASES = [
      ['firstPageMs', 'first table page on screen, from the click'],
      ['uploadMs', '… the upload (POST to its 202)'],
      ['jobMs', "… the job (the executor's start to end)"],
      ['lateMs', "… the job's end seen by the page after"],
      ['pageMs', "… the page's own part after that"],
      ['besideJobMs', 'first page less the job'],
      ['blockedMs', "the tab's main thread blocked (long tasks)"],
    ];
    const after = page.medians.after;
    section(
      "7. The staff page's first screen of a large result",
      [
        `\`node bench/page.mjs\` in Debian's Chromium (headless), the embedded service in the bench's child process: the p100k-sized return (${fmt(page.divergencias)} divergences, xlsx ${(page.xlsxBytes / MiB).toFixed(1)} MiB) chosen in "Ver divergências" and the button pressed, timed inside the page from the click event to the frame after the first table row is in the DOM. The page's files as they were at ${page.before} and as they are now, served at the service's origin, alternating against the same service, ${page.runs} each; medians in ms. The job is the same code in both; it moves with the machine's load more than anything else, so the wait less the job is what the page decides.`,
        '',
        table(
          ['part', `page at ${page.before}`, 'page now'],
          PAGE_PHASES.map(([k, label]) => [label, fmt(page.medians.before[k]), fmt(after[k])]),
        ),
        '',
        `First page, every run of the page now: ${page.firstPages.after.map((ms) => fmt(ms)).join(', ')} ms (at ${page.before}: ${page.firstPages.before.map((ms) => fmt(ms)).join(', ')}).`,
      ].join('\n'),
    );
    target(
      `the page: first screen page of ${fmt(page.divergencias)} divergences ≤ 1.5 s after the click (median)`,
      `${fmt(after.firstPageMs)} ms, of which the job ${fmt(after.jobMs)} (page at ${page.before}: ${fmt(page.medians.before.firstPageMs)} ms)`,
      after.firstPageMs <= 1500,
    );
  } else {
    section(
      "7. The staff page's first screen of a large result",
      existsSync(CHROMIUM) ? '_Failed, see the console output._' : `_No Chromium at ${CHROMIUM}: skipped._`,
    );
  }
}
