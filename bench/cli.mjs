// Section 5: `censo lote` on a folder of 200 school-sized returns (about 1,500 rows each) and
// `censo divergencias` on one 25 MB return, whole processes, one thread against the default.
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generate } from './gen-big.mjs';
import { DATA, median, runNodeTimed } from './lib.mjs';

const CLI = path.join('cli', 'dist', 'main.js');
const SCHOOLS = 200;

/** One school's return: 500 persons, 1,500 rows (generated on first use). */
export async function schoolReturn(root = DATA) {
  const one = path.join(root, 'school500');
  if (!existsSync(path.join(one, 'expected-summary.json'))) await generate({ persons: 500, perPerson: 3, out: one, formats: ['xlsx'] });
  const summary = JSON.parse(readFileSync(path.join(one, 'expected-summary.json'), 'utf8'));
  return { file: path.join(one, 'retorno.xlsx'), rowsPerFile: summary.rows };
}

/** 200 returns of 500 persons (1,500 rows) each, in nested folders as a secretariat's would be. */
async function schoolFolder(root) {
  const dir = path.join(root, 'lote200');
  const { file, rowsPerFile } = await schoolReturn(root);
  if (!existsSync(path.join(dir, `regional-9`, `escola-199.xlsx`))) {
    for (let i = 0; i < SCHOOLS; i++) {
      const folder = path.join(dir, `regional-${i % 10}`);
      mkdirSync(folder, { recursive: true });
      cpSync(file, path.join(folder, `escola-${i}.xlsx`));
    }
  }
  return { dir, rowsPerFile };
}

export async function runCli(data, runs, log = console.log) {
  const { dir, rowsPerFile } = await schoolFolder(path.dirname(data.x25.files.xlsx).replace(/x25$/, ''));
  const threads = os.availableParallelism();
  const samples = { one: [], all: [], big: [] };
  for (let run = 1; run <= runs; run++) {
    samples.one.push(await runNodeTimed([CLI, '--quiet', 'lote', dir, '-o', '/dev/null', '--concurrency', '1']));
    samples.all.push(await runNodeTimed([CLI, '--quiet', 'lote', dir, '-o', '/dev/null']));
    samples.big.push(await runNodeTimed([CLI, 'divergencias', data.x25.files.xlsx, '-o', '/dev/null']));
    log(`  cli run ${run}/${runs} done`);
  }
  const ms = (key) => median(samples[key]);
  return {
    files: SCHOOLS,
    rows: SCHOOLS * rowsPerFile,
    threads,
    oneMs: ms('one'),
    allMs: ms('all'),
    bigMs: ms('big'),
    bigRows: data.x25.rows,
    speedup: median(samples.one.map((t, i) => t / samples.all[i])),
  };
}
