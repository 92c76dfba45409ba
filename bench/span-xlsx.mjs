// Section 3e: the xlsx request of issue 35. The 300k-row return (p100k, 12.2 MiB) through
// POST /api/divergencias-rf as a client sees it (embedded mode, a fresh connection, the body
// streamed from the file), against exceljs's bare iteration of the same file in the same round,
// and cut into its parts next to their floors: the upload against a server that only drains it,
// the job (jobMs from the request log) against the core and the job run alone in a fresh process,
// what the server does beyond the job, and the download against the same bytes from a server that
// only sends them. The order of the request and exceljs alternates round by round.
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { deploy } from './http.mjs';
import { DATA, ROOT, median, medians, runNodeJson } from './lib.mjs';
import { bareServer, clientSpan, jobTimes, post } from './span.mjs';

const ONE = path.join(ROOT, 'bench/one.mjs');

/**
 * One case of bench/one.mjs in a fresh process: its ms, its count checked (exceljs counts the
 * sheet's rows, the return's title and header rows too: at least `expect`).
 */
async function alone(kind, file, expect) {
  const r = await runNodeJson(['--expose-gc', ONE, kind, file]);
  if (kind === 'exceljs' ? r.out < expect : r.out !== expect) throw new Error(`${kind}: ${r.out} rows, expected ${expect}`);
  return r.ms;
}

export async function runXlsxSpan(data, runs, log = console.log) {
  const set = data.p100k;
  const file = set.files.xlsx;
  mkdirSync(path.join(DATA, 'logs'), { recursive: true });
  const d = await deploy('span-xlsx', 0, null, { LOG_LEVEL: 'info' });
  const url = `${d.url}/api/divergencias-rf`;
  const rounds = [];
  let bare;
  let answerBytes;
  try {
    // Warm-up: threads, JIT, the page cache (the file and exceljs's modules).
    const warm = await clientSpan(url, file);
    await alone('exceljs', file, set.rows);
    const { answer } = await post(url, warm.request);
    answerBytes = answer.length;
    bare = await bareServer(answer);
    const bareUrl = `http://127.0.0.1:${bare.address().port}/`;
    for (let run = 1; run <= runs; run++) {
      const r = {};
      const id = `span-xlsx-${process.pid}-${run}`;
      if (run % 2 === 1) r.exceljs = await alone('exceljs', file, set.rows);
      const span = await clientSpan(url, file, id);
      if (run % 2 === 0) r.exceljs = await alone('exceljs', file, set.rows);
      r.upload = span.times.sent;
      r.server = span.times.head - span.times.sent;
      r.download = span.times.last - span.times.head;
      r.request = span.times.last;
      r.parse = span.parse;
      // Floors, in the same round.
      const floor = await post(bareUrl, span.request);
      r.uploadFloor = floor.times.sent;
      r.downloadFloor = floor.times.last - floor.times.head;
      r.core = await alone('core', file, set.divergencias);
      r.jobAlone = await alone('job-div-json', file, set.divergencias);
      rounds.push(r);
      log(
        `  xlsx span run ${run}/${runs}: request ${r.request.toFixed(0)} ms, exceljs ${r.exceljs.toFixed(0)} ms = ${(r.request / r.exceljs).toFixed(2)}×`,
      );
    }
  } finally {
    bare?.close();
    await d.stop();
  }
  const jobs = jobTimes(path.join(DATA, 'logs', 'api-span-xlsx.log'));
  rounds.forEach((r, i) => {
    r.job = jobs.get(`span-xlsx-${process.pid}-${i + 1}`) ?? NaN;
    r.serverBeyondJob = r.server - r.job;
  });
  const ratios = rounds.map((r) => r.request / r.exceljs);
  return {
    runs,
    bodyBytes: statSync(file).size,
    answerBytes,
    rows: set.rows,
    divergencias: set.divergencias,
    rounds,
    median: medians(rounds),
    ratio: median(ratios),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
  };
}

// `node bench/span-xlsx.mjs [runs]`: alone, after `npm run build`.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { ensureData } = await import('./data.mjs');
  const data = await ensureData(console.log);
  const runs = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 5);
  const result = await runXlsxSpan(data, runs);
  for (const [k, v] of Object.entries(result.median)) console.log(k.padEnd(16), v.toFixed(0));
  console.log('ratio median', result.ratio.toFixed(2), 'min', result.ratioMin.toFixed(2), 'max', result.ratioMax.toFixed(2));
}
