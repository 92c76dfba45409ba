#!/usr/bin/env node
// One measurement in a fresh process, so that its peak RSS is its own:
//   node --expose-gc bench/one.mjs <case> <file> [<txt>]
// Prints one JSON line: { case, ms, rows, out, maxRssMB }. Cases:
//   core        read the return + the divergence rules (what a /api/divergencias-rf job does, minus the
//               result file): the project's streaming readers, xlsx or json by extension
//   exceljs     exceljs's streaming WorkbookReader doing nothing but iterate rows
//   floor-xlsx  the physical floor: inflate the sheet (and shared strings) and count rows
//               with a byte search, building nothing
//   json-parse  a bare readFile + JSON.parse of the whole file (the rows array, nothing else)
//   job-rf      runJob retorno-rf: read + extract + merge with the txt + write the result file
//   job-corrigido  runJob censo-corrigido: the same merge, then the corrected census file
//   job-div-json|csv|xlsx  runJob divergencias writing that format
//   pool-rf     the retorno-rf job as the service runs it: on a one-thread job pool (the whole
//               process's peak: main thread, pool and the job thread)
// Every case loads the core alone (`@censo/shared/local`, as the CLI does), not the service's
// queue, logging and metrics modules, so a peak is the work's own. BENCH_SHARED=<path of a
// shared/dist/local.js> runs the case on that build of the core instead (bench/before.mjs builds
// an earlier revision's).
// Peak RSS is VmHWM from /proc/self/status: resourceUsage().maxRSS is inherited from the parent
// at fork, so a large parent (bench/run.mjs) would be reported for every case.
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createInflateRaw } from 'node:zlib';

const [kind, file, txt] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const format = file.toLowerCase().endsWith('.xlsx') ? 'xlsx' : 'json';
const SHARED = process.env.BENCH_SHARED ? pathToFileURL(process.env.BENCH_SHARED).href : '@censo/shared/local';

async function core() {
  // The job's own path (core/job.ts): rows in batches to the rules, the divergences one at a time.
  const shared = await import(SHARED);
  const open = () => shared.readRetornoBatches({ path: file, format });
  return async () => {
    let out = 0;
    const count = async (batches) => {
      out = 0;
      for await (const _divergencia of shared.itemsOf(batches)) out++;
    };
    // comDivergencias since issue 58 (it reads the return again when its persons come apart);
    // divergenciaBatches on a release from before it.
    if (shared.comDivergencias) await shared.comDivergencias(open, shared.BUILTIN_FIELD_LABELS, count);
    else await count(shared.divergenciaBatches(open()));
    return { out };
  };
}

async function exceljs() {
  const ExcelJS = require('exceljs');
  return async () => {
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(file, {
      sharedStrings: 'cache',
      hyperlinks: 'ignore',
      styles: 'ignore',
      worksheets: 'emit',
      entries: 'emit',
    });
    let rows = 0;
    for await (const sheet of reader) for await (const _row of sheet) rows++;
    return { out: rows };
  };
}

async function floorXlsx() {
  const yauzl = require('yauzl');
  return async () => {
    const zip = await new Promise((res, rej) => yauzl.open(file, { lazyEntries: true, autoClose: false }, (e, z) => (e ? rej(e) : res(z))));
    const entries = await new Promise((res, rej) => {
      const list = [];
      zip.on('entry', (e) => {
        list.push(e);
        zip.readEntry();
      });
      zip.once('end', () => res(list));
      zip.once('error', rej);
      zip.readEntry();
    });
    const ROW = Buffer.from('<row');
    let rows = 0;
    for (const entry of entries) {
      if (!/^xl\/(worksheets\/sheet\d+|sharedStrings)\.xml$/i.test(entry.fileName)) continue;
      const isSheet = entry.fileName.includes('worksheets');
      const raw = await new Promise((res, rej) => zip.openReadStream(entry, { decodeFileData: false }, (e, s) => (e ? rej(e) : res(s))));
      const inflate = raw.pipe(createInflateRaw({ chunkSize: 256 * 1024 }));
      let tail = Buffer.alloc(0);
      for await (const chunk of inflate) {
        if (!isSheet) continue;
        // Scan the chunk (with the 3 bytes before it, so a tag cut in two is still seen).
        const buf = tail.length ? Buffer.concat([tail, chunk]) : chunk;
        let at = buf.indexOf(ROW);
        while (at !== -1) {
          rows++;
          at = buf.indexOf(ROW, at + 4);
        }
        tail = buf.subarray(buf.length - 3);
      }
    }
    zip.close();
    return { out: rows };
  };
}

async function jsonParse() {
  return async () => {
    const value = JSON.parse(readFileSync(file, 'utf8'));
    return { out: Array.isArray(value) ? value.length : Object.keys(value).length };
  };
}

function job(kind, output = 'json') {
  return async () => {
    const { runJob } = await import(SHARED);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'censo-bench-'));
    return async () => {
      try {
        const retorno = { path: file, format };
        const resultPath = path.join(dir, 'r');
        const data =
          kind === 'divergencias'
            ? { kind, retorno, format: output, resultPath }
            : kind === 'retorno-rf'
              ? { kind, retorno, txt: { path: txt }, format: output, resultPath }
              : { kind, retorno, txt: { path: txt }, resultPath };
        const result = await runJob(data);
        if (!result.ok) throw new Error(`job failed: ${JSON.stringify(result)}`);
        return { out: result.count, bytes: result.bytes };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
  };
}

function pooled(kind) {
  return async () => {
    const { createJobPool } = await import(SHARED);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'censo-bench-'));
    const pool = createJobPool({ threads: 1 });
    return async () => {
      try {
        const result = await pool.run({
          kind,
          retorno: { path: file, format },
          txt: { path: txt },
          format: 'json',
          resultPath: path.join(dir, 'r'),
        });
        if (!result.ok) throw new Error(`job failed: ${JSON.stringify(result)}`);
        return { out: result.count, bytes: result.bytes };
      } finally {
        await pool.close();
        rmSync(dir, { recursive: true, force: true });
      }
    };
  };
}

const CASES = {
  core,
  exceljs,
  'floor-xlsx': floorXlsx,
  'json-parse': jsonParse,
  'job-rf': job('retorno-rf'),
  'job-corrigido': job('censo-corrigido'),
  'job-div-json': job('divergencias', 'json'),
  'job-div-csv': job('divergencias', 'csv'),
  'job-div-xlsx': job('divergencias', 'xlsx'),
  'pool-rf': pooled('retorno-rf'),
};
if (!CASES[kind]) {
  console.error(`unknown case ${kind}`);
  process.exit(2);
}
const work = await CASES[kind]();
globalThis.gc?.();
const t0 = performance.now();
const result = await work();
const ms = performance.now() - t0;
const hwmKiB = Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? Number.NaN);
console.log(JSON.stringify({ case: kind, ms, ...result, maxRssMB: hwmKiB / 1024 }));
