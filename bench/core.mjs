// Section 1–2: the core readers and the merge, each run in its own process (peak RSS is the
// process's own), cases interleaved run by run so that ratios compare like with like.
import path from 'node:path';
import { sharedAt } from './before.mjs';
import { median, runNodeJson } from './lib.mjs';

const ONE = path.join('bench', 'one.mjs');

/** The cases of this section, given the data sets. */
export function coreCases(data) {
  // The merge's memory work is judged against the core as it was, in the same run.
  const before = { BENCH_SHARED: sharedAt() };
  const x100 = data.p100k.files.xlsx;
  const x25 = data.x25.files.xlsx;
  const j25 = data.j25.files.json;
  return [
    {
      id: 'xlsx100-core',
      group: 'xlsx100',
      label: 'censo-api core (read + divergence rules, as a job runs them)',
      args: ['core', x100],
      rows: data.p100k.rows,
      expect: data.p100k.divergencias,
    },
    {
      id: 'xlsx100-exceljs',
      group: 'xlsx100',
      label: 'exceljs 4.4 streaming reader, rows only',
      args: ['exceljs', x100],
      rows: data.p100k.rows,
    },
    {
      id: 'xlsx100-floor',
      group: 'xlsx100',
      label: 'floor: inflate + byte scan, no rows',
      args: ['floor-xlsx', x100],
      rows: data.p100k.rows,
    },
    {
      id: 'xlsx25-core',
      group: 'xlsx25',
      label: 'censo-api core (read + divergence rules, as a job runs them)',
      args: ['core', x25],
      rows: data.x25.rows,
      expect: data.x25.divergencias,
    },
    {
      id: 'xlsx25-exceljs',
      group: 'xlsx25',
      label: 'exceljs 4.4 streaming reader, rows only',
      args: ['exceljs', x25],
      rows: data.x25.rows,
    },
    { id: 'xlsx25-floor', group: 'xlsx25', label: 'floor: inflate + byte scan, no rows', args: ['floor-xlsx', x25], rows: data.x25.rows },
    {
      id: 'json25-core',
      group: 'json25',
      label: 'censo-api core (read + divergence rules, as a job runs them)',
      args: ['core', j25],
      rows: data.j25.rows,
      expect: data.j25.divergencias,
    },
    { id: 'json25-parse', group: 'json25', label: 'bare readFile + JSON.parse', args: ['json-parse', j25], rows: data.j25.rows },
    {
      id: 'merge-t25',
      group: 'merge',
      label: 'runJob retorno-rf (read + extract + merge + write)',
      args: ['job-rf', data.t25.files.xlsx, data.t25.files.txt],
      rows: data.t25.rows,
      expect: data.t25.pessoas,
    },
    {
      id: 'merge-t25-pool',
      group: 'merge',
      label: 'the same job on a one-thread job pool, as the service runs it',
      args: ['pool-rf', data.t25.files.xlsx, data.t25.files.txt],
      rows: data.t25.rows,
      expect: data.t25.pessoas,
    },
    {
      id: 'merge-t25-before',
      group: 'merge',
      label: 'runJob retorno-rf, the core before (bench/before.mjs)',
      args: ['job-rf', data.t25.files.xlsx, data.t25.files.txt],
      env: before,
      rows: data.t25.rows,
      expect: data.t25.pessoas,
    },
    {
      id: 'merge-t25-pool-before',
      group: 'merge',
      label: 'the same job on a one-thread job pool, the core before',
      args: ['pool-rf', data.t25.files.xlsx, data.t25.files.txt],
      env: before,
      rows: data.t25.rows,
      expect: data.t25.pessoas,
    },
    {
      id: 'merge-p100k',
      group: 'merge',
      label: 'runJob retorno-rf (read + extract + merge + write)',
      args: ['job-rf', data.p100k.files.xlsx, data.p100k.files.txt],
      rows: data.p100k.rows,
      expect: data.p100k.pessoas,
    },
    {
      id: 'corrigido-t25',
      group: 'corrigido',
      label: 'runJob censo-corrigido (the same merge + the corrected txt)',
      args: ['job-corrigido', data.t25.files.xlsx, data.t25.files.txt],
      rows: data.t25.rows,
      expect: data.t25.pessoas,
    },
    {
      id: 'corrigido-t25-before',
      group: 'corrigido',
      label: 'runJob censo-corrigido, the core before',
      args: ['job-corrigido', data.t25.files.xlsx, data.t25.files.txt],
      env: before,
      rows: data.t25.rows,
      expect: data.t25.pessoas,
    },
    {
      id: 'div100-json',
      group: 'formats',
      label: 'runJob divergencias, format=json',
      args: ['job-div-json', x100],
      rows: data.p100k.rows,
      expect: data.p100k.divergencias,
    },
    {
      id: 'div100-csv',
      group: 'formats',
      label: 'runJob divergencias, format=csv',
      args: ['job-div-csv', x100],
      rows: data.p100k.rows,
      expect: data.p100k.divergencias,
    },
    {
      id: 'div100-xlsx',
      group: 'formats',
      label: 'runJob divergencias, format=xlsx',
      args: ['job-div-xlsx', x100],
      rows: data.p100k.rows,
      expect: data.p100k.divergencias,
    },
  ];
}

export async function runCore(data, runs, log = console.log) {
  const cases = coreCases(data);
  const samples = Object.fromEntries(cases.map((c) => [c.id, []]));
  for (let run = 1; run <= runs; run++) {
    for (const c of cases) {
      const r = await runNodeJson(['--expose-gc', ONE, ...c.args], c.env ? { env: c.env } : {});
      if (c.expect !== undefined && r.out !== c.expect) throw new Error(`${c.id}: ${r.out} results, expected ${c.expect}`);
      samples[c.id].push(r);
    }
    log(`  core run ${run}/${runs} done`);
  }
  const results = {};
  for (const c of cases) {
    const s = samples[c.id];
    const ms = median(s.map((r) => r.ms));
    results[c.id] = {
      ...c,
      ms,
      rowsPerSec: c.rows / (ms / 1000),
      maxRssMB: median(s.map((r) => r.maxRssMB)),
      maxRssMax: Math.max(...s.map((r) => r.maxRssMB)),
      out: s[0].out,
      bytes: s[0].bytes,
      runs: s.length,
      all: s.map((r) => Math.round(r.ms)),
    };
  }
  // Ratios within the same run, then their median.
  const ratio = (a, b) => median(samples[a].map((r, i) => r.ms / samples[b][i].ms));
  results.ratios = {
    xlsx100CoreVsExceljs: ratio('xlsx100-exceljs', 'xlsx100-core'),
    xlsx100CoreVsFloor: ratio('xlsx100-core', 'xlsx100-floor'),
    xlsx25CoreVsExceljs: ratio('xlsx25-exceljs', 'xlsx25-core'),
    xlsx25CoreVsFloor: ratio('xlsx25-core', 'xlsx25-floor'),
    json25CoreVsParse: ratio('json25-core', 'json25-parse'),
    corrigidoVsRf: ratio('corrigido-t25', 'merge-t25'),
    mergeVsBefore: ratio('merge-t25', 'merge-t25-before'),
    corrigidoVsBefore: ratio('corrigido-t25', 'corrigido-t25-before'),
    csvVsJson: ratio('div100-csv', 'div100-json'),
    xlsxVsJson: ratio('div100-xlsx', 'div100-json'),
  };
  return results;
}
