#!/usr/bin/env node
// `npm run bench [-- --quick]`: generates the data it needs in .bench/, runs every section,
// prints the tables and writes BENCHMARKS.md. Needs nothing outside the repo except the local
// Redis and PostgreSQL (REDIS_URL / DATABASE_URL, defaulting to 127.0.0.1); a section whose
// server is not there is skipped and says so. BENCH_REDIS_URL / BENCH_DATABASE_URL override those;
// BENCH_LOG_LEVEL sets the deployments' LOG_LEVEL (default warn; their logs go to .bench/logs/).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIG_FILES, PROBE_GAP_MS, runBurst } from './burst.mjs';
import { loteReport, runCli } from './cli.mjs';
import { BEFORE_REV, treeAt } from './before.mjs';
import { runCore } from './core.mjs';
import { ensureData } from './data.mjs';
import { redisAvailable, runHttp } from './http.mjs';
import { runSpan } from './span.mjs';
import { runXlsxSpan } from './span-xlsx.mjs';
import { runStorage } from './storage.mjs';
import { runWorkerMemory } from './worker-memory.mjs';
import { CHROMIUM, DATA, ROOT, fmt, node24, runNodeJson, table, versionOf } from './lib.mjs';
import { postgresAvailable, runQuery } from './query.mjs';

const quick = process.argv.includes('--quick');
const RUNS = quick ? 2 : 5;
const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const started = Date.now();
const MiB = 1024 * 1024;
mkdirSync(path.join(DATA, 'logs'), { recursive: true });

const log = (...a) => console.log(...a);
const md = [];
const section = (title, body) => {
  md.push(`## ${title}\n\n${body}\n`);
  log(`\n## ${title}\n\n${body}\n`);
};
/** A section's measurements, or null when it cannot run here (`enabled` false) or failed (logged). */
async function measure(enabled, name, run) {
  if (!enabled) return null;
  try {
    return await run();
  } catch (err) {
    log(`  ${name} section failed: ${err.message}`);
    return null;
  }
}

// --- machine ---------------------------------------------------------------------------------
const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model;
const [redisVersion, pgVersion] = await Promise.all([redisAvailable(redisUrl), postgresAvailable(databaseUrl)]);
const machine = [
  `- Date: ${new Date().toISOString()} (${quick ? 'quick run: 2 runs per case' : `full run: ${RUNS} runs per case`}, medians)`,
  `- CPU: ${cpu}, ${os.availableParallelism()} cores; RAM ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB; ${os.type()} ${os.release()}`,
  `- Load average when the run started: ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(', ')} (1, 5, 15 min; ${os.availableParallelism()} cores); other work on the machine moves every absolute figure`,
  `- Node ${process.version}; Redis ${redisVersion ?? 'not reachable'}; PostgreSQL ${pgVersion ?? 'not reachable'}`,
  `- Packages: ${['fastify', '@fastify/multipart', 'bullmq', 'ioredis', 'piscina', 'yauzl', 'pg', 'exceljs', 'autocannon'].map((p) => `${p} ${versionOf(p)}`).join(', ')}`,
].join('\n');
log(`# censo-api benchmarks\n\n${machine}`);

// --- data ------------------------------------------------------------------------------------
log('\nData (generated into .bench/ on first use by bench/gen-big.mjs, deterministic):');
const data = await ensureData(log);
const dataRows = Object.entries(data).map(([name, d]) => [
  name,
  fmt(d.persons),
  fmt(d.rows),
  Object.entries(d.sizes)
    .map(([f, b]) => `${f} ${(b / MiB).toFixed(2)} MiB`)
    .join(', '),
]);
const dataTable = table(['set', 'persons', 'return rows', 'files (limit 25 MiB each)'], dataRows);
log(dataTable);

const targets = [];
const target = (name, value, ok) => targets.push([name, value, ok === null ? 'n/a' : ok ? 'met' : '**not met**']);

// --- 1–2. core ---------------------------------------------------------------------------------
log(`\nCore readers (${RUNS} runs per case, one process each)...`);
const core = await runCore(data, RUNS, log);
const coreRow = (id, vsId) => {
  const r = core[id];
  return [r.label, fmt(r.ms), fmt(r.rowsPerSec), fmt(r.maxRssMB), vsId ? `${(r.ms / core[vsId].ms).toFixed(2)}×` : ''];
};
const H = ['reader', 'time ms', 'return rows/s', 'peak RSS MiB', 'time vs core'];
section(
  '1. Core read + extract',
  [
    `Each case runs ${RUNS} times in a fresh \`node\` process (\`bench/one.mjs\`); cases are interleaved run by run, the table shows medians and peak RSS is the process's \`VmHWM\` (each process loads the core alone, \`@censo/shared/local\`). "core" is the return read in batches through the divergence rules (\`readRetornoBatches\` + \`divergenciaBatches\`, as \`runJob\` does), the work of a \`/api/divergencias-rf\` job minus writing the result. Ratios below are computed within each run, then the median taken.`,
    '',
    `**xlsx, 300k rows (p100k, ${(data.p100k.sizes.xlsx / MiB).toFixed(1)} MiB)**`,
    '',
    table(H, [
      coreRow('xlsx100-core', 'xlsx100-core'),
      coreRow('xlsx100-exceljs', 'xlsx100-core'),
      coreRow('xlsx100-floor', 'xlsx100-core'),
    ]),
    '',
    `**xlsx near the limit, 600k rows (x25, ${(data.x25.sizes.xlsx / MiB).toFixed(1)} MiB)**`,
    '',
    table(H, [coreRow('xlsx25-core', 'xlsx25-core'), coreRow('xlsx25-exceljs', 'xlsx25-core'), coreRow('xlsx25-floor', 'xlsx25-core')]),
    '',
    `**json near the limit, ${fmt(data.j25.rows)} rows (j25, ${(data.j25.sizes.json / MiB).toFixed(1)} MiB)**`,
    '',
    table(H, [coreRow('json25-core', 'json25-core'), coreRow('json25-parse', 'json25-core')]),
    '',
    `Same-run ratios: exceljs is ${core.ratios.xlsx100CoreVsExceljs.toFixed(2)}× (300k) / ${core.ratios.xlsx25CoreVsExceljs.toFixed(2)}× (600k) slower than the core; the core is ${core.ratios.xlsx100CoreVsFloor.toFixed(2)}× / ${core.ratios.xlsx25CoreVsFloor.toFixed(2)}× the floor; json core / bare JSON.parse = ${core.ratios.json25CoreVsParse.toFixed(2)}×.`,
  ].join('\n'),
);
const mergeRow = (id, name) => {
  const r = core[id];
  return [name, fmt(r.ms), fmt(r.rowsPerSec), fmt(r.out), fmt(r.out / (r.ms / 1000)), (r.bytes / MiB).toFixed(1), fmt(r.maxRssMB)];
};
section(
  '2. retorno-rf merge',
  [
    '`runJob` of kind `retorno-rf` in one process: read and extract the xlsx return, merge with the text file (SPEC §3.2), write the `{"pessoas": [...]}` body to disk.',
    `"Before" rows run the same case on the core built at ${BEFORE_REV} (\`bench/before.mjs\`), alternating with the current build in the same run.`,
    '',
    table(
      ['input', 'time ms', 'return rows/s', 'pessoas', 'pessoas/s', 'result MiB', 'peak RSS MiB'],
      [
        mergeRow(
          'merge-t25',
          `t25: txt ${(data.t25.sizes.txt / MiB).toFixed(1)} MiB (${fmt(data.t25.persons)} persons) + xlsx ${(data.t25.sizes.xlsx / MiB).toFixed(1)} MiB`,
        ),
        mergeRow('merge-t25-pool', 't25 on a one-thread job pool (whole process: main thread, pool, job thread)'),
        mergeRow('merge-t25-before', `t25, the core at ${BEFORE_REV} (before the merge kept one object per person)`),
        mergeRow('merge-t25-pool-before', `t25 on a one-thread job pool, the core at ${BEFORE_REV}`),
        mergeRow(
          'merge-p100k',
          `p100k: txt ${(data.p100k.sizes.txt / MiB).toFixed(1)} MiB + xlsx ${(data.p100k.sizes.xlsx / MiB).toFixed(1)} MiB`,
        ),
      ],
    ),
  ].join('\n'),
);
target(
  'xlsx ≥ 200k return rows/s through the core (300k-row return / 600k-row return)',
  `${fmt(core['xlsx100-core'].rowsPerSec)} / ${fmt(core['xlsx25-core'].rowsPerSec)} rows/s`,
  core['xlsx100-core'].rowsPerSec >= 200_000 && core['xlsx25-core'].rowsPerSec >= 200_000,
);
target(
  'xlsx peak RSS ≤ 150 MB at 25 MB',
  `${fmt(core['xlsx25-core'].maxRssMB)} MiB (max of runs ${fmt(core['xlsx25-core'].maxRssMax)})`,
  core['xlsx25-core'].maxRssMax * 1.048576 <= 150,
);
target(
  'xlsx core ≤ 2.5× the inflate-and-scan floor (300k-row / 600k-row return)',
  `${(core['xlsx100-core'].ms / core['xlsx100-floor'].ms).toFixed(2)}× / ${(core['xlsx25-core'].ms / core['xlsx25-floor'].ms).toFixed(2)}×`,
  core['xlsx100-core'].ms <= 2.5 * core['xlsx100-floor'].ms && core['xlsx25-core'].ms <= 2.5 * core['xlsx25-floor'].ms,
);
target(
  'retorno-rf job peak RSS ≤ 150 MiB (t25; in one process / on a job pool)',
  `${fmt(core['merge-t25'].maxRssMB)} / ${fmt(core['merge-t25-pool'].maxRssMB)} MiB (before: ${fmt(core['merge-t25-before'].maxRssMB)} / ${fmt(core['merge-t25-pool-before'].maxRssMB)})`,
  core['merge-t25'].maxRssMB <= 150 && core['merge-t25-pool'].maxRssMB <= 150,
);
target('json ≤ 2× a bare JSON.parse of the same file', `${core.ratios.json25CoreVsParse.toFixed(2)}×`, core.ratios.json25CoreVsParse <= 2);
target(
  'json peak RSS ≤ 200 MB at 25 MB',
  `${fmt(core['json25-core'].maxRssMB)} MiB (JSON.parse: ${fmt(core['json25-parse'].maxRssMB)} MiB)`,
  core['json25-core'].maxRssMax * 1.048576 <= 200,
);

const jobRow = (id, name, vsId) => {
  const r = core[id];
  return [name, fmt(r.ms), fmt(r.out), (r.bytes / MiB).toFixed(1), fmt(r.maxRssMB), vsId ? `${(r.ms / core[vsId].ms).toFixed(2)}×` : ''];
};
section(
  '2b. The corrected census file and the spreadsheet answers',
  [
    '`runJob` in one process, peak RSS from `VmHWM`. The corrected file is the retorno-rf merge plus a streamed rewrite of the whole txt; the formats write the same p100k divergences as JSON, CSV or XLSX (yazl, one sheet, inline strings).',
    '',
    table(
      ['job', 'time ms', 'items', 'result MiB', 'peak RSS MiB', 'time vs'],
      [
        jobRow('merge-t25', 't25 retorno-rf (pessoas JSON)', 'merge-t25'),
        jobRow('corrigido-t25', 't25 censo-corrigido (the txt, ISO-8859-1)', 'merge-t25'),
        jobRow('corrigido-t25-before', `t25 censo-corrigido, the core at ${BEFORE_REV}`, 'merge-t25'),
        jobRow('div100-json', 'p100k divergencias, json', 'div100-json'),
        jobRow('div100-csv', 'p100k divergencias, csv', 'div100-json'),
        jobRow('div100-xlsx', 'p100k divergencias, xlsx', 'div100-json'),
      ],
    ),
    '',
    `Same-run time ratios to the core at ${BEFORE_REV}: retorno-rf ${core.ratios.mergeVsBefore.toFixed(2)}×, censo-corrigido ${core.ratios.corrigidoVsBefore.toFixed(2)}×.`,
    '',
    `Same-run ratios: censo-corrigido / retorno-rf = ${core.ratios.corrigidoVsRf.toFixed(2)}×; csv / json = ${core.ratios.csvVsJson.toFixed(2)}×; xlsx / json = ${core.ratios.xlsxVsJson.toFixed(2)}×.`,
  ].join('\n'),
);
target('censo-corrigido ≤ 1.3× the retorno-rf time (t25)', `${core.ratios.corrigidoVsRf.toFixed(2)}×`, core.ratios.corrigidoVsRf <= 1.3);
target('xlsx answer ≤ 2× the JSON answer (p100k divergences)', `${core.ratios.xlsxVsJson.toFixed(2)}×`, core.ratios.xlsxVsJson <= 2);
target(
  'censo-corrigido peak RSS ≤ 1.2× the retorno-rf job',
  `${fmt(core['corrigido-t25'].maxRssMB)} / ${fmt(core['merge-t25'].maxRssMB)} MiB (censo-corrigido before: ${fmt(core['corrigido-t25-before'].maxRssMB)} MiB)`,
  core['corrigido-t25'].maxRssMax <= 1.2 * core['merge-t25'].maxRssMax,
);

// --- 5. CLI ------------------------------------------------------------------------------------
log('\nCLI (censo lote)...');
const cli = await runCli(data, Math.min(RUNS, 3), log);
const loteTable = loteReport(cli);
section(
  '5. The censo CLI',
  [
    `Whole \`node cli/dist/main.js\` processes, medians of ${Math.min(RUNS, 3)} alternating runs. \`lote\` (JSON to /dev/null) on school returns (xlsx, ${fmt(cli.rowsPerFile)} rows each): one file alone (what a run costs besides its files), 200 copies in 10 folders, 1,000 hard links in 50; \`divergencias\` on the x25 return (${fmt(cli.bigRows)} rows).`,
    '',
    table(
      ['run', 'time ms', 'files/s', 'return rows/s'],
      [...loteTable.rows, ['divergencias, one 25 MB return', fmt(cli.bigMs), '', fmt(cli.bigRows / (cli.bigMs / 1000))]],
    ),
    '',
    `${loteTable.text} The single-file core figure (section 1) is ${fmt(core['xlsx25-core'].rowsPerSec)} rows/s.`,
  ].join('\n'),
);
target(
  `censo lote ≥ 1.7× the one-thread rate on ${cli.threads} cores`,
  `${cli.many.speedup.toFixed(2)}× on 1,000 files (200: ${cli.small.speedup.toFixed(2)}×; fixed cost left out: ${cli.steady.speedup.toFixed(2)}×)`,
  cli.many.speedup >= 1.7,
);
target(
  'censo lote: two threads in one process ≥ 0.95× two one-thread processes on the same files (every round)',
  `${cli.processes.threadsShare.toFixed(2)} (rounds ${cli.processes.threadsShares.map((x) => x.toFixed(2)).join(', ')}; two processes ${cli.processes.speedup.toFixed(2)}× one, two threads ${cli.many.speedup.toFixed(2)}×)`,
  Math.min(...cli.processes.threadsShares) >= 0.95,
);

// --- 3. HTTP -----------------------------------------------------------------------------------
log('\nHTTP (autocannon)...');
const http = await measure(true, 'HTTP', () => runHttp(data, { quick, redisUrl: redisVersion ? redisUrl : null, log }));
if (http) {
  const codes = (s) =>
    Object.entries(s.statusCodes ?? {})
      .filter(([c]) => c !== '200')
      .map(([c, n]) => `${n}×${c}`)
      .join(' ') || '—';
  const rows = [];
  for (const r of http.results) {
    const name =
      r.workers === 0 ? 'embedded (one process, thread pool)' : `queue: API + ${r.workers} worker process${r.workers > 1 ? 'es' : ''}`;
    rows.push([
      name,
      'small, 50 conn',
      fmt(r.small50.requests),
      fmt(r.small50.reqPerSec),
      fmt(r.small50.p50),
      fmt(r.small50.p99),
      `${r.small50.errors + r.small50.timeouts} / ${codes(r.small50)}`,
      r.workers ? `${fmt(r.overheadP50At50, 1)}` : '',
    ]);
    rows.push([
      name,
      'small, 1 conn',
      fmt(r.small1.requests),
      fmt(r.small1.reqPerSec),
      fmt(r.small1.p50),
      fmt(r.small1.p99),
      `${r.small1.errors + r.small1.timeouts} / ${codes(r.small1)}`,
      r.workers ? `${fmt(r.overheadP50At1, 1)} (mean ${fmt(r.overheadMeanAt1, 2)})` : '',
    ]);
    rows.push([
      name,
      'large, 2 conn',
      fmt(r.large.requests),
      fmt(r.large.reqPerSec, 2),
      fmt(r.large.p50),
      fmt(r.large.p99),
      `${r.large.errors + r.large.timeouts} / ${codes(r.large)}`,
      '',
    ]);
  }
  const mem = http.results.map((r) => `${r.mode} ${fmt(r.apiPeakRssMB)} MiB`).join(', ');
  const embeddedRun = http.results.find((r) => r.workers === 0);
  if (embeddedRun?.json25Ms) {
    const ratio = embeddedRun.json25Ms / core['json25-parse'].ms;
    target(
      'json end to end (POST /api/divergencias-rf, j25, embedded) ≤ 3× a bare JSON.parse',
      `${fmt(embeddedRun.json25Ms)} ms = ${ratio.toFixed(2)}× (JSON.parse ${fmt(core['json25-parse'].ms)} ms)`,
      ratio <= 3,
    );
  }
  if (embeddedRun) {
    target(
      'embedded process peak during the large-upload phase ≤ 600 MiB',
      `${fmt(embeddedRun.apiPeakRssMB)} MiB`,
      embeddedRun.apiPeakRssMB <= 600,
    );
  }
  section(
    '3. End to end over HTTP',
    [
      `Loopback, autocannon ${versionOf('autocannon')} programmatic API, prebuilt multipart bodies. Small: \`test/fixtures/basico/retorno.json\` (${fmt(http.smallBytes)} B body) → \`POST /api/divergencias-rf\` for ${http.smallSeconds} s (5 s at 1 connection). Large: p100k xlsx + txt (${(http.largeBytes / MiB).toFixed(1)} MiB body, ${fmt(http.largeRows)} return rows) → \`POST /api/retorno-rf\`, ${http.largeAmount} requests. Each mode is a fresh deployment (\`services/api/dist/main.js\`, and \`--role=api\` + \`services/worker/dist/main.js\` processes with REDIS_URL and a unique QUEUE_PREFIX), warmed up first. Latencies in ms. Queue overhead = queue p50 − embedded p50 in the same run. Everything (API, workers, Redis, autocannon) shares the 2 cores.`,
      '',
      redisVersion ? '' : '_Redis not reachable: queue modes skipped._',
      table(['mode', 'load', 'requests', 'req/s', 'p50', 'p99', 'errors / non-200', 'queue overhead p50'], rows),
      '',
      `API process peak RSS (VmHWM): ${mem}. In embedded mode the jobs' worker threads live in the API process.`,
    ].join('\n'),
  );
  const emb = http.results.find((r) => r.workers === 0);
  const q1 = http.results.find((r) => r.workers === 1);
  const q2 = http.results.find((r) => r.workers === 2);
  target(
    'small uploads ≥ 300 req/s, 0 errors (embedded / queue 1w / queue 2w)',
    http.results
      .map((r) => `${fmt(r.small50.reqPerSec)} req/s, ${r.small50.errors + r.small50.timeouts + r.small50.non2xx} err`)
      .join(' / '),
    http.results.every((r) => r.small50.reqPerSec >= 300 && r.small50.errors + r.small50.timeouts + r.small50.non2xx === 0),
  );
  if (q1)
    target(
      'queue overhead ≤ 3 ms p50 at 50 in flight (1w / 2w)',
      `${fmt(q1.overheadP50At50, 1)} / ${fmt(q2?.overheadP50At50, 1)} ms (at 1 in flight: ${fmt(q1.overheadP50At1, 1)} / ${fmt(q2?.overheadP50At1, 1)} ms)`,
      q1.overheadP50At50 <= 3 && (q2?.overheadP50At50 ?? 0) <= 3,
    );
  else target('queue overhead ≤ 3 ms p50 at 50 in flight', 'Redis not reachable', null);
  void emb;
} else {
  section('3. End to end over HTTP', '_Failed, see the console output and .bench/logs._');
}

// --- 3b. storage ----------------------------------------------------------------------------------
log('\nStorage: S3 bucket vs shared folder...');
const storage = await measure(redisVersion, 'storage', () => runStorage(data, { quick, redisUrl, log }));
if (storage) {
  const overhead = storage.s3Ms - storage.folderMs;
  section(
    '3b. Storage: an S3 bucket against the shared folder',
    [
      `The large retorno-rf (p100k xlsx + txt, ${(storage.bodyBytes / MiB).toFixed(1)} MiB body; ${(storage.resultBytes / MiB).toFixed(1)} MiB answer) over HTTP, one request at a time, ${storage.runs} alternating pairs after a warm-up. Both deployments are queue mode with one API and one worker process; the S3 one has \`S3_BUCKET\` set and no shared folder, against s3rver ${storage.s3rver} on loopback, which runs in the bench process (its CPU time counts). "Transfers alone" is the SDK moving the same bytes in the service's order (2 inputs up, down, the result up, down) with nothing else: the storage's own cost.`,
      '',
      table(
        ['storage', 'median ms', 'vs folder', 'API peak RSS MiB'],
        [
          ['folder (`UPLOAD_DIR`)', fmt(storage.folderMs), '1.00×', fmt(storage.apiPeakRssMB.folder)],
          ['S3 bucket', fmt(storage.s3Ms), `${(storage.s3Ms / storage.folderMs).toFixed(2)}×`, fmt(storage.apiPeakRssMB.s3)],
          ['transfers alone (SDK ↔ s3rver)', fmt(storage.transfersMs), '', ''],
        ],
      ),
      '',
      `Overhead of the bucket: ${fmt(overhead)} ms per request, against ${fmt(storage.transfersMs)} ms for the transfers alone.`,
    ].join('\n'),
  );
} else {
  section(
    '3b. Storage: an S3 bucket against the shared folder',
    redisVersion ? '_Failed, see the console output._' : '_Redis not reachable: skipped._',
  );
}

// --- 2c. A worker process with two 25 MB jobs ---------------------------------------------------
log('\nWorker memory (two t25 jobs at once)...');
const workerMemory = await measure(redisVersion, 'worker memory', () => runWorkerMemory(data, { redisUrl, log }));
if (workerMemory) {
  const row = (kind) => {
    const r = workerMemory[kind];
    return [kind, fmt(r.idle), fmt(r.peak), fmt(r.apiPeak), fmt(r.ms), (r.bytes / MiB).toFixed(1)];
  };
  section(
    '2c. A worker process with two 25 MB jobs at once',
    [
      "Queue mode: one API and one worker process (`WORKER_CONCURRENCY=2`, so two job threads), the local Redis. Two t25 requests (txt 24.8 MiB + xlsx 14.6 MiB each) are sent at the same moment; the worker's peak RSS (`VmHWM`) is read when both answers are in. A fresh deployment per job kind.",
      '',
      table(
        ['job ×2', 'worker idle RSS MiB', 'worker peak RSS MiB', 'API peak RSS MiB', 'both answered ms', 'answer MiB'],
        [row('retorno-rf'), row('censo-corrigido')],
      ),
    ].join('\n'),
  );
  const peak = Math.max(workerMemory['retorno-rf'].peak, workerMemory['censo-corrigido'].peak);
  target(
    'a worker process with 2 threads holds two 25 MB jobs under 400 MiB',
    `${fmt(workerMemory['retorno-rf'].peak)} MiB (retorno-rf) / ${fmt(workerMemory['censo-corrigido'].peak)} MiB (censo-corrigido)`,
    peak < 400,
  );
} else {
  section(
    '2c. A worker process with two 25 MB jobs at once',
    redisVersion ? '_Failed, see the console output._' : '_Redis not reachable: skipped._',
  );
}

// --- 6. a state's burst (SPEC §7, issue 35) ---------------------------------------------------------
log("\nA state's burst (censo lote --servidor), before and now...");
const burst = await measure(redisVersion, 'burst', () => runBurst({ quick, redisUrl, log }));
log(quick ? '\nThe 50,000-file batch: not in a quick run.' : `\nThe burst at ${fmt(BIG_FILES)} files (current build alone)...`);
const big = await measure(redisVersion && !quick, `burst at ${BIG_FILES} files`, () =>
  runBurst({ files: BIG_FILES, serviceOnly: true, redisUrl, log }),
);
if (burst) {
  const b = burst;
  const rev = b.beforeRev;
  const grupos = `now, TAREFAS_POR_JOB=${b.grupos.groupFiles}`;
  const builds = [
    [`tree at ${rev}`, b.before],
    ['now', b.now],
    [grupos, b.grupos],
  ];
  const perFile = (seconds) => fmt((seconds * 1000) / b.files, 1);
  const failures = (r) =>
    r.failedFiles > 0 ? ` (${fmt(r.failedFiles)} files failed, a defect: ${r.failures.map((line) => `\`${line}\``).join(', ')})` : '';
  const identical = (r) => `${r.sameOutput ? '**byte-identical**' : '**different (a defect)**'}${failures(r)}`;
  const flat = (t) => `${(t.last / t.first).toFixed(2)}×`;
  const parts = [
    `${fmt(b.files)} school returns (xlsx, ${fmt(b.rowsPerFile)} rows each, hard links to one copy of a return in 50 folders) sent as one batch by \`censo lote <pasta> --servidor\` to one API and one worker process (queue mode, shared folder, the local Redis), against the local \`censo lote\` on the same folder, in the same run. The service runs three times on that folder, one after the other: first the whole tree at ${rev}, the last commit before issue 35's work (its CLI, API and worker, built beside the current one under \`.bench/tree-${rev}/\` by \`treeAt\` in \`bench/before.mjs\`, with a \`node_modules\` of its own whose \`@censo\` packages are that tree's), then the current build twice: as deployed by default (a queue job per task) and with group jobs (\`TAREFAS_POR_JOB=${b.grupos.groupFiles}\`, the CLI's request size: one job per request). Every run writes the combined CSV; against the local one, the file at ${rev} is ${identical(b.before)}, the current one's ${identical(b.now)} and with group jobs ${identical(b.grupos)}. Each deployment gets its own probe: the small \`basico\` return sent to the synchronous \`POST /api/divergencias-rf\` one at a time (every ${PROBE_GAP_MS} ms), "idle" on the fresh deployment before its burst, "during" while the burst runs. Everything (CLI, API, worker, Redis, probe) shares the 2 cores.`,
    '',
    table(
      ['run', 'time s', 'files/s', 'rate vs local', 'CPU s', 'CPU ms per file', 'CPU vs local'],
      [
        [
          'local `censo lote` (2 job threads)',
          fmt(b.local.ms / 1000, 1),
          fmt(b.local.filesPerSec, 1),
          '1.00×',
          fmt(b.local.cpu, 1),
          fmt(b.local.cpuPerFileMs, 1),
          '1.00×',
        ],
        ...builds.map(([name, r]) => [
          `\`censo lote --servidor\`, ${name}`,
          fmt(r.server.ms / 1000, 1),
          fmt(r.filesPerSec, 1),
          `${r.ratio.toFixed(2)}×`,
          fmt(r.cpu.total, 1),
          fmt(r.cpuPerFileMs, 1),
          `${r.cpuVsLocal.toFixed(2)}×`,
        ]),
      ],
    ),
    '',
    table(
      ["where the burst's CPU went, ms per file", ...builds.map(([name]) => name)],
      [
        ['CLI (hash, upload, read results, write CSV)', 'cli'],
        ['API (intake, records, results; probe included)', 'api'],
        ['worker (the jobs; probe included)', 'worker'],
        ['Redis', 'redis'],
        ['**all four**', 'total'],
      ].map(([what, key]) => [what, ...builds.map(([, r]) => perFile(r.cpu[key]))]),
    ),
    '',
    table(
      ['process', 'build', 'RSS first third MiB', 'RSS last third MiB', 'last / first', 'peak MiB'],
      ['API', 'worker', 'CLI'].flatMap((name) =>
        builds.map(([build, r]) => {
          const t = r[name.toLowerCase()];
          return [name, build, fmt(t.first), fmt(t.last), flat(t), fmt(t.peak)];
        }),
      ),
    ),
    '',
    table(
      ['synchronous probe', 'requests', 'p50 ms', 'p95 ms', 'p95 vs idle', 'statuses'],
      builds.flatMap(([build, r]) => [
        [`idle, ${build}`, fmt(r.idle.n), fmt(r.idle.p50, 1), fmt(r.idle.p95, 1), '1.00×', JSON.stringify(r.idle.statuses)],
        [
          `during the burst, ${build}`,
          fmt(r.during.n),
          fmt(r.during.p50, 1),
          fmt(r.during.p95, 1),
          `${r.p95Ratio.toFixed(2)}×`,
          JSON.stringify(r.during.statuses),
        ],
      ]),
    ),
    '',
    `Redis memory per waiting task: ${fmt(b.before.perTaskBytes / 1024, 2)} KiB at ${rev}, ${fmt(b.now.perTaskBytes / 1024, 2)} KiB now (for each build, 1,000 tasks posted one return a request to an API with no worker, \`used_memory\` before and after: the BullMQ job, the task record, its idempotency record and the batch's indexes); ${fmt(b.now.perTaskBytesGrouped / 1024, 2)} KiB now when the same tasks come ${b.now.groupFiles} returns a request, as the current CLI sends a folder, and ${fmt(b.grupos.perTaskBytesGrouped / 1024, 2)} KiB so with group jobs (one BullMQ job and one hash field a task instead of a job each). A backlog at \`MAX_QUEUED_TAREFAS\` (10,000) is about ${fmt((b.now.perTaskBytes * 10_000) / MiB)} MiB. The same API then gets one request carrying two returns: at ${rev} it answers ${b.before.twoReturns.status}${b.before.twoReturns.erro ? ` ("${b.before.twoReturns.erro}")` : ''}, now ${b.now.twoReturns.status}${b.now.twoReturns.erro ? ` ("${b.now.twoReturns.erro}")` : ''}, so each deployment runs the build it is said to.`,
  ];
  if (big) {
    const g = big;
    const redisMiB = (bytes) => fmt(bytes / MiB, 1);
    const growth = g.download.apiRssPeakMB - g.download.apiRssBeforeMB;
    parts.push(
      '',
      `**${fmt(g.files)} files in one batch**`,
      '',
      `The current build alone (${g.tarefasPorJob > 1 ? `group jobs, \`TAREFAS_POR_JOB=${g.tarefasPorJob}\`` : 'a queue job per task'}; no local run, no probe, no earlier build): ${fmt(g.files)} hard links in 50 folders through \`censo lote --servidor\` to one API and one worker process in ${fmt(g.server.ms / 1000)} s (${fmt(g.filesPerSec, 1)} files/s, ${fmt(g.cpuPerFileMs, 1)} CPU ms per file over CLI, API, worker and Redis). RSS of the three processes and Redis's \`used_memory\` sampled every second (${fmt(g.api.samples)} samples); then the batch's combined CSV (\`GET /api/lotes/{id}/divergencias?format=csv\`, the batch found as the bench key's newest by \`GET /api/lotes?limit=1\`) read to its end into a hash while the API's RSS is sampled every 50 ms.`,
      '',
      table(
        ['during the batch', 'first third MiB', 'last third MiB', 'last / first', 'peak MiB'],
        [
          ['API', fmt(g.api.first), fmt(g.api.last), flat(g.api), fmt(g.api.peak)],
          ['worker', fmt(g.worker.first), fmt(g.worker.last), flat(g.worker), fmt(g.worker.peak)],
          ['CLI (`censo lote --servidor`)', fmt(g.cli.first), fmt(g.cli.last), flat(g.cli), fmt(g.cli.peak)],
          [
            `Redis \`used_memory\` (${redisMiB(g.redis.before)} MiB before)`,
            redisMiB(g.redis.first),
            redisMiB(g.redis.last),
            flat(g.redis),
            redisMiB(g.redis.peak),
          ],
        ],
      ),
      '',
      table(
        ['combined answer', 'status', 'MiB', 'time s', 'MiB/s', 'API RSS before MiB', 'API RSS peak MiB'],
        [
          [
            '`GET /api/lotes/{id}/divergencias?format=csv`',
            String(g.download.status),
            fmt(g.download.bytes / MiB),
            fmt(g.download.ms / 1000, 1),
            fmt(g.download.bytes / MiB / (g.download.ms / 1000)),
            fmt(g.download.apiRssBeforeMB),
            fmt(g.download.apiRssPeakMB),
          ],
        ],
      ),
      '',
      `${g.failedFiles > 0 ? `**${fmt(g.failedFiles)} files failed** (a defect; the CLI exited 1), e.g. ${g.failures.map((line) => `\`${line}\``).join(', ')}. ` : ''}${g.download.parcial ? 'The batch was not whole (409): the answer was read with `parcial=true`. ' : ''}The API's RSS grew by ${fmt(growth)} MiB while it sent the answer. Its lines (${fmt(g.download.lines)}: a header and one line a divergence, the route adding a \`referencia\` column) are ${g.download.sameRowsAsCli ? 'as many as' : '**not as many as (a defect)**'} the CLI's combined CSV of the same run (${fmt(g.cliOutput.lines)}).`,
    );
  } else if (!quick) {
    parts.push('', `**${fmt(BIG_FILES)} files in one batch**`, '', '_Failed, see the console output._');
  }
  section("6. A state's burst: one batch of school returns through the service, before and now", parts.join('\n'));
  // The targets are read on the group jobs' run (what an operator of a state's bursts deploys), the default beside it.
  const g = b.grupos;
  const was = (key, digits = 2) => `job per task: ${b.now[key].toFixed(digits)}×; at ${rev}: ${b.before[key].toFixed(digits)}×`;
  target(
    'burst: CPU per file through the service (CLI + API + worker + Redis) ≤ 1.5× the local censo lote',
    `${g.cpuVsLocal.toFixed(2)}× with group jobs (${fmt(g.cpuPerFileMs, 1)} / ${fmt(b.local.cpuPerFileMs, 1)} ms; ${was('cpuVsLocal')})`,
    g.cpuVsLocal <= 1.5,
  );
  target(
    'burst: censo lote --servidor ≥ 0.6× the local rate (same files, same run)',
    `${g.ratio.toFixed(2)}× with group jobs (${was('ratio')})`,
    g.ratio >= 0.6,
  );
  target(
    'burst: synchronous p95 during the burst ≤ 1.5× idle',
    `${fmt(g.during.p95, 1)} / ${fmt(g.idle.p95, 1)} ms = ${g.p95Ratio.toFixed(2)}× with group jobs (${was('p95Ratio')})`,
    g.p95Ratio <= 1.5,
  );
  target(
    'burst: Redis memory per waiting task ≤ 2.7 KiB',
    `${fmt(g.perTaskBytesGrouped / 1024, 2)} KiB with group jobs, ${g.groupFiles} returns a request as the CLI sends them (a job per task: ${fmt(b.now.perTaskBytesGrouped / 1024, 2)} KiB, and ${fmt(b.now.perTaskBytes / 1024, 2)} KiB one return a request; at ${rev}: ${fmt(b.before.perTaskBytes / 1024, 2)} KiB)`,
    g.perTaskBytesGrouped <= 2.7 * 1024,
  );
} else {
  section(
    "6. A state's burst: one batch of school returns through the service, before and now",
    redisVersion ? '_Failed, see the console output._' : '_Redis not reachable: skipped._',
  );
  target('burst: CPU per file, rate, probe p95 and Redis per waiting task', 'not measured', null);
}
if (big) {
  const procs = [
    ['API', big.api],
    ['worker', big.worker],
    ['CLI', big.cli],
  ];
  target(
    `burst at ${fmt(big.files)} files: RSS of every process flat (last third ≤ 1.1× first third)`,
    procs.map(([name, t]) => `${name} ${fmt(t.first)} → ${fmt(t.last)} MiB`).join(', '),
    procs.every(([, t]) => t.last <= 1.1 * t.first),
  );
  target(
    `burst at ${fmt(big.files)} files: the combined CSV streamed in bounded memory (API RSS +≤ 100 MiB while sending it)`,
    `${fmt(big.download.bytes / MiB)} MiB in ${fmt(big.download.ms / 1000, 1)} s, API ${fmt(big.download.apiRssBeforeMB)} → ${fmt(big.download.apiRssPeakMB)} MiB${big.failedFiles > 0 ? `; ${fmt(big.failedFiles)} files failed` : ''}`,
    big.download.status === 200 && big.download.sameRowsAsCli && big.download.apiRssPeakMB - big.download.apiRssBeforeMB <= 100,
  );
} else {
  target(`burst at ${fmt(BIG_FILES)} files: RSS flat, combined CSV streamed`, quick ? 'not measured (quick run)' : 'not measured', null);
}

// --- 3c. the json span as a client sees it ----------------------------------------------------
log('\nThe json span, client to client...');
try {
  // The service as a whole at BEFORE_REV: today's API no longer runs on that revision's core alone
  // (it imports what the core has gained since), which is what made this section fail in an earlier run.
  const span = await runSpan(data, RUNS, log, { before: { apiMain: treeAt(BEFORE_REV).apiMain } });
  const m = span.median;
  const part = (label, ms, before, floor, floorLabel) => [
    label,
    before === null ? '' : fmt(before),
    fmt(ms),
    floor === null ? '' : fmt(floor),
    floorLabel,
  ];
  section(
    '3c. A 24 MB json return, client to client',
    [
      `\`POST /api/divergencias-rf\` with j25 (${(span.bodyBytes / MiB).toFixed(1)} MiB, answer ${(span.answerBytes / MiB).toFixed(1)} MiB), embedded deployment, one request at a time over a fresh connection, timed from the client's first byte to the answer parsed. ${span.runs} rounds after a warm-up; each round runs the request, then the floors, so the ratios are same-round. The first column is the same streaming request to a second API process, the whole service as it was at ${BEFORE_REV} (\`bench/before.mjs\` \`treeAt\`), first or second in turn in each round. Parts: *upload* is until the client's last byte is sent (the body is encoded while it is sent: a FormData holding \`fs.openAsBlob(file)\`); *server* from there to the answer's head (the job, the result file opened); *job* is the API log's \`jobMs\`; *download* to the answer's last byte; *parse* the client's \`JSON.parse\` of it. Floors: the same body to a bare \`http\` server that only drains it, the same answer sent back by it, \`readFile\` + \`JSON.parse\` of the upload on a fresh worker thread, and the multipart encoding alone.`,
      '',
      table(
        ['part', `service at ${BEFORE_REV}, ms`, 'ms (median)', 'floor ms', 'floor'],
        [
          part(
            'upload (client encoding while sending, server storing)',
            m.upload,
            m.beforeUpload,
            m.uploadFloor,
            'loopback to a draining server, same client',
          ),
          part('server: until the answer starts', m.server, m.beforeServer, m.jobFloor, 'readFile + JSON.parse on a thread'),
          part('… of which the job (jobMs)', m.job, m.beforeJob, null, ''),
          part('download of the answer', m.download, m.beforeDownload, m.downloadFloor, 'a bare server sending the same bytes'),
          part('client JSON.parse of the answer', m.parse, m.beforeParse, m.parse, 'itself'),
          part(
            '**whole span**',
            m.total,
            m.beforeTotal,
            m.bareParse,
            'bare readFile + JSON.parse of the upload (main thread, median of three)',
          ),
          part('whole span, client building the body in memory first', m.totalInMemory, null, m.bareParse, ''),
          part('(multipart encoding alone, file-backed)', m.encodeOnly, null, null, ''),
        ],
      ),
      '',
      `Same-round ratios to a bare JSON.parse: ${span.ratio.toFixed(2)}× with a streaming client (the service at ${BEFORE_REV}, alternating: ${span.ratioBefore.toFixed(2)}×), ${span.ratioInMemory.toFixed(2)}× when the client reads the file and builds the whole body before sending.`,
    ].join('\n'),
  );
  target(
    'json client to client (j25, encode → answer parsed) ≤ 3× a bare JSON.parse',
    `${span.ratio.toFixed(2)}× (service at ${BEFORE_REV}: ${span.ratioBefore.toFixed(2)}×; in-memory client: ${span.ratioInMemory.toFixed(2)}×)`,
    span.ratio <= 3,
  );
} catch (err) {
  log(`  span failed: ${err.stack ?? err}`);
  section('3c. A 24 MB json return, client to client', '_Failed, see the console output and .bench/logs._');
}

// --- 3d. the same span on Node 24, with and without the API's collector settings ----------------
const nodeImage = node24();
log(`\nThe json span on Node 24 (${nodeImage ?? 'no Node 24 binary: .ci/run unpacks one, or set BENCH_NODE24'})...`);
const span24 = await measure(nodeImage !== null, 'span on Node 24', () =>
  runNodeJson([path.join('bench', 'span.mjs'), String(RUNS), '--untuned-before', '--json'], { node: nodeImage, timeoutMs: 600_000 }),
);
if (span24) {
  const m = span24.median;
  const row = (label, key) => [label, fmt(m[`before${key[0].toUpperCase()}${key.slice(1)}`]), fmt(m[key])];
  section(
    `3d. The same span on Node ${span24.node}, the image's runtime`,
    [
      `Section 3c's request and floors run by \`node bench/span.mjs ${RUNS} --untuned-before\` under Node ${span24.node} (\`npm run bench\` itself runs on the machine's ${process.version}). The first column is the same build of the API with \`services/api/src/heap-tuning.ts\` emptied (\`apiWithoutHeapTuning\` in \`bench/before.mjs\`), alternating with it in each round; medians in ms.`,
      '',
      table(
        ['part', 'without the collector settings', 'with them'],
        [
          row('upload', 'upload'),
          row('server: until the answer starts', 'server'),
          row('… of which the job (jobMs)', 'job'),
          row('download of the answer', 'download'),
          row('client JSON.parse of the answer', 'parse'),
          row('**whole span**', 'total'),
        ],
      ),
      '',
      `A bare JSON.parse of the upload: ${fmt(m.bareParse)} ms. Same-round ratios to it: **${span24.ratio.toFixed(2)}×** with the settings, ${span24.ratioBefore.toFixed(2)}× without.`,
    ].join('\n'),
  );
  target(
    `json client to client on Node ${span24.node} ≤ 3× a bare JSON.parse`,
    `${span24.ratio.toFixed(2)}× (without the collector settings: ${span24.ratioBefore.toFixed(2)}×)`,
    span24.ratio <= 3,
  );
} else {
  section(
    "3d. The same span on Node 24, the image's runtime",
    nodeImage ? '_Failed, see the console output._' : '_No Node 24 binary: not run._',
  );
}

// --- 3e. the xlsx request against exceljs (issue 35) ------------------------------------------
log('\nThe xlsx request against exceljs...');
const xspan = await measure(true, 'xlsx span', () => runXlsxSpan(data, RUNS, log));
if (xspan) {
  const m = xspan.median;
  const row = (label, key, floor, floorLabel) => [label, fmt(m[key]), floor === null ? '' : fmt(m[floor]), floorLabel];
  section(
    '3e. The xlsx request against exceljs',
    [
      `\`POST /api/divergencias-rf\` with p100k's xlsx (${(xspan.bodyBytes / MiB).toFixed(1)} MiB, ${fmt(xspan.rows)} return rows; answer ${(xspan.answerBytes / MiB).toFixed(1)} MiB of JSON, ${fmt(xspan.divergencias)} divergences), embedded deployment, one request at a time over a fresh connection, timed from the client's first byte to the answer's last, against exceljs's streaming reader iterating the same file's rows and doing nothing else (\`bench/one.mjs exceljs\`, a fresh process), run before or after the request in turn. ${xspan.runs} rounds after a warm-up (\`bench/span-xlsx.mjs\`); medians in ms. Floors in the same round: the same body to a bare \`http\` server that only drains it and the same answer sent back by it; the core (read + divergence rules) and the whole job (the same plus writing the JSON result file) each alone in a fresh process.`,
      '',
      table(
        ['part', 'ms (median)', 'floor ms', 'floor'],
        [
          row(
            'upload (client encoding while sending, server storing)',
            'upload',
            'uploadFloor',
            'loopback to a draining server, same client',
          ),
          row('server: until the answer starts', 'server', null, ''),
          row('… the job (jobMs)', 'job', 'jobAlone', 'the same job alone (read, rules, result file)'),
          row('… of which reading the return and the rules', 'core', null, 'the core alone, fresh process'),
          row('… the server beyond the job', 'serverBeyondJob', null, ''),
          row('download of the answer', 'download', 'downloadFloor', 'a bare server sending the same bytes'),
          row('**the request, first byte to last**', 'request', null, ''),
          row('exceljs iterating the rows', 'exceljs', null, ''),
          row('(client JSON.parse of the answer, not counted)', 'parse', null, ''),
        ],
      ),
      '',
      `Same-round ratios, the request to exceljs: median ${xspan.ratio.toFixed(2)}×, every round between ${xspan.ratioMin.toFixed(2)}× and ${xspan.ratioMax.toFixed(2)}× (${xspan.rounds.map((r) => (r.request / r.exceljs).toFixed(2)).join(', ')}).`,
    ].join('\n'),
  );
  target(
    'the xlsx request (p100k, first byte to last) ≤ 0.35× exceljs iterating the rows, in every round',
    `${xspan.ratioMin.toFixed(2)}–${xspan.ratioMax.toFixed(2)}× (median ${xspan.ratio.toFixed(2)}×; ${fmt(m.request)} / ${fmt(m.exceljs)} ms)`,
    xspan.ratioMax <= 0.35,
  );
} else {
  section('3e. The xlsx request against exceljs', '_Failed, see the console output and .bench/logs._');
}

// --- 7. the staff page --------------------------------------------------------------------------
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

// --- 4. query ----------------------------------------------------------------------------------
log('\nQuery route...');
const query = await measure(pgVersion, 'query', () => runQuery({ quick, databaseUrl, log }));
if (query) {
  const q = query;
  section(
    '4. Query route',
    [
      `\`GET /api/query?query=audits\` on ${fmt(q.rows)} rows (schema \`censo_bench\`, loaded with \`generate_series\`), ${q.requests} sequential requests each over loopback (client-side time, JSON body read in full). The deep page uses the cursor the route hands out after id ${fmt(q.depth)} (built with the route's own \`encodeCursor\` and checked against a cursor the route returned); OFFSET and keyset rows are the same page as plain SQL over one connection.`,
      '',
      table(
        ['request', 'p50 ms', 'p99 ms', 'min ms'],
        [
          ['HTTP first page (1000 rows)', fmt(q.first.p50, 2), fmt(q.first.p99, 2), fmt(q.first.min, 2)],
          [`HTTP page at depth ${fmt(q.depth)} (keyset cursor)`, fmt(q.deep.p50, 2), fmt(q.deep.p99, 2), fmt(q.deep.min, 2)],
          [`SQL \`OFFSET ${q.depth} LIMIT 1000\``, fmt(q.offset.p50, 2), fmt(q.offset.p99, 2), fmt(q.offset.min, 2)],
          [`SQL \`WHERE id > ${q.depth} … LIMIT 1000\``, fmt(q.keyset.p50, 2), fmt(q.keyset.p99, 2), fmt(q.keyset.min, 2)],
        ],
      ),
      '',
      table(
        ['CSV export of all rows', 'time ms', 'rows/s', 'MiB sent', 'API RSS before', 'API RSS peak', 'growth'],
        q.csv.runs.map((r, i) => [
          `run ${i + 1}`,
          fmt(r.ms),
          fmt(r.rowsPerSec),
          (r.bytes / MiB).toFixed(1),
          fmt(r.rssBeforeMB),
          fmt(r.rssPeakMB),
          fmt(r.rssPeakMB - r.rssBeforeMB),
        ]),
      ),
      '',
      `API RSS sampled every 50 ms from /proc/<pid>/status (MiB); process peak (VmHWM) at the end: ${fmt(q.apiHwmMB)} MiB.`,
    ].join('\n'),
  );
  target(
    'query page at depth ≈ first page, ≤ 3 ms on 1M rows',
    `first ${fmt(q.first.p50, 2)} ms, depth ${fmt(q.deep.p50, 2)} ms (OFFSET ${fmt(q.offset.p50)} ms)`,
    q.deep.p50 <= 3 && q.deep.p50 <= q.first.p50 * 1.5,
  );
  target(
    'CSV ≥ 300k rows/s with flat RSS',
    `${fmt(q.csv.rowsPerSec)} rows/s, RSS +${fmt(q.csv.rssGrowthMB)} MiB during export`,
    q.csv.rowsPerSec >= 300_000 && q.csv.rssGrowthMB <= 100,
  );
} else {
  section('4. Query route', pgVersion ? '_Failed, see the console output._' : '_PostgreSQL not reachable: skipped._');
  target('query page at depth ≈ first page', 'not measured', null);
  target('CSV ≥ 300k rows/s with flat RSS', 'not measured', null);
}

// --- profile of the xlsx hot path ----------------------------------------------------------------
const profDir = path.join(DATA, 'prof');
rmSync(profDir, { recursive: true, force: true });
mkdirSync(profDir, { recursive: true });
await runNodeJson(['--cpu-prof', `--cpu-prof-dir=${profDir}`, path.join('bench', 'one.mjs'), 'core', data.x25.files.xlsx]);
const top = topFrames(
  path.join(
    profDir,
    readdirSync(profDir).find((f) => f.endsWith('.cpuprofile')),
  ),
  12,
);
section(
  'Where the xlsx core spends its time',
  [
    `\`node --cpu-prof bench/one.mjs core .bench/x25/retorno.xlsx\` (self time; "(idle)" is the main thread waiting for zlib's inflate on the libuv pool):`,
    '',
    table(['self ms', '%', 'function', 'location'], top),
  ].join('\n'),
);

function topFrames(file, n) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map();
  let total = 0;
  p.samples.forEach((s, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    const f = byId.get(s).callFrame;
    const key = `${f.functionName || '(anonymous)'}\t${f.url ? `${f.url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${f.lineNumber + 1}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, t]) => {
      const [fn, loc] = k.split('\t');
      return [fmt(t / 1000), ((100 * t) / total).toFixed(1), `\`${fn}\``, loc ? `\`${loc}\`` : ''];
    });
}

// --- targets and report ----------------------------------------------------------------------------
section('Targets (2-core machine; benchmark figures, not test assertions)', table(['target', 'measured', ''], targets));
const notes = readFileSync(path.join(ROOT, 'bench', 'notes.md'), 'utf8');
const doc = [
  '# censo-api benchmarks',
  '',
  `Written by \`npm run bench${quick ? ' -- --quick' : ''}\` (\`bench/run.mjs\`); do not edit by hand, edit \`bench/notes.md\` for the prose. Total run time ${((Date.now() - started) / 60000).toFixed(1)} min.`,
  '',
  machine,
  '',
  '## Data',
  '',
  dataTable,
  '',
  ...md,
  notes.trim(),
  '',
].join('\n');
// Keep the Load section written by `npm run load` (scripts/load.mjs) across bench re-runs.
const previous = (() => {
  try {
    return readFileSync(path.join(ROOT, 'BENCHMARKS.md'), 'utf8');
  } catch {
    return '';
  }
})();
const loadSection = /<!-- load:start -->[\s\S]*?<!-- load:end -->/.exec(previous)?.[0];
writeFileSync(path.join(ROOT, 'BENCHMARKS.md'), loadSection ? `${doc.trimEnd()}\n\n${loadSection}\n` : doc);
log(`\nWrote BENCHMARKS.md in ${((Date.now() - started) / 60000).toFixed(1)} min.`);
