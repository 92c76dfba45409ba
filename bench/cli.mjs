// Section 5: `censo lote` on folders of school-sized returns (about 1,500 rows each) and
// `censo divergencias` on one 25 MB return, whole processes, one thread against the default.
//
// A process's fixed cost (node, its modules, the job threads loading theirs, the first files run
// before the JIT has warmed up) is a large part of a 200-file run, and it is the same whatever the
// thread count, so the 200-file ratio understates what the threads do. The folder is therefore
// also run at 1,000 files (hard links to one return, as section 6 does), the fixed cost is
// measured alone (a folder of one file), and the rate between 200 and 1,000 files, where only
// the files differ, is given as the steady-state rate.
//
// `node bench/cli.mjs [runs]` runs the lote part alone (after `npm run build`) and prints it.
import { cpSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BEFORE_REV, cliAt } from './before.mjs';
import { generate } from './gen-big.mjs';
import { DATA, ROOT, fmt, median, runNodeTimed, runNodeTimedCpu, table } from './lib.mjs';

const CLI = path.join('cli', 'dist', 'main.js');
const SCHOOLS = 200;
const MANY = 1000;
/** The samples of the MANY-file folder through the CLI and core at BEFORE_REV. */
const BEFORE_SET = `${MANY}-at-${BEFORE_REV}`;

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

/** `count` hard links to the school return, in `folders` folders (`name` tells apart two of a size). */
function linkedFolder(root, file, count, folders, name = '') {
  const dir = path.join(root, `lote${count}-links${name}`);
  if (!existsSync(path.join(dir, `regional-${(count - 1) % folders}`, `escola-${count - 1}.xlsx`))) {
    rmSync(dir, { recursive: true, force: true });
    for (let i = 0; i < count; i++) {
      const folder = path.join(dir, `regional-${i % folders}`);
      mkdirSync(folder, { recursive: true });
      linkSync(file, path.join(folder, `escola-${i}.xlsx`));
    }
  }
  return dir;
}

/**
 * The lote runs: each folder at one thread and at the default, alternating, `runs` rounds; in the
 * same rounds the 1,000-file folder also through the CLI and core built at BEFORE_REV.
 */
export async function runLote(runs, log = console.log, root = DATA) {
  const { dir, rowsPerFile } = await schoolFolder(root);
  const { file } = await schoolReturn(root);
  const folders = { one: linkedFolder(root, file, 1, 1), [SCHOOLS]: dir, [MANY]: linkedFolder(root, file, MANY, 50) };
  // The MANY files split in two folders of their own, for two one-thread processes side by side.
  const halves = ['-a', '-b'].map((name) => linkedFolder(root, file, MANY / 2, 25, name));
  const before = cliAt();
  const builds = {
    now: { entry: CLI, hooks: [], env: {} },
    before: {
      entry: before.entry,
      hooks: ['--import', pathToFileURL(path.join(ROOT, 'bench', 'shared-hooks.mjs')).href],
      env: { BENCH_SHARED_DIST: before.sharedDist },
    },
  };
  const threads = os.availableParallelism();
  const samples = {};
  const once = (build, folder, mode) => {
    const { entry, hooks, env } = builds[build];
    const args = [...hooks, entry, '--quiet', 'lote', folder, '-o', '/dev/null', ...(mode === 'one' ? ['--concurrency', '1'] : [])];
    return runNodeTimedCpu(args, { sampleMs: 20, env });
  };
  // The bound for two threads in one process (issue 35): two one-thread processes, each on half
  // of the files, started together; they share nothing but the cores. The wall time is the later's.
  const twoProcesses = async () => {
    const t0 = performance.now();
    const both = await Promise.all(halves.map((folder) => once('now', folder, 'one')));
    return { ms: performance.now() - t0, cpu: both[0].cpu + both[1].cpu };
  };
  for (let run = 1; run <= runs; run++) {
    for (const [set, folder] of Object.entries(folders)) {
      for (const mode of ['one', 'all']) {
        (samples[`${set}-${mode}`] ??= []).push(await once('now', folder, mode));
        if (set === String(MANY)) (samples[`${BEFORE_SET}-${mode}`] ??= []).push(await once('before', folder, mode));
      }
    }
    (samples[`${MANY}-processes`] ??= []).push(await twoProcesses());
    log(`  lote run ${run}/${runs} done`);
  }
  const ms = (key) => median(samples[key].map((s) => s.ms));
  // Cores kept busy on average: the one-thread run is not one core (see BENCHMARKS.md).
  const cores = (key) => median(samples[key].map((s) => s.cpu / (s.ms / 1000)));
  const pairs = (set) => median(samples[`${set}-one`].map((s, i) => s.ms / samples[`${set}-all`][i].ms));
  // Files per second between the 200- and the 1,000-file runs of the same round.
  const marginal = (mode) =>
    samples[`${MANY}-${mode}`].map((s, i) => (MANY - SCHOOLS) / ((s.ms - samples[`${SCHOOLS}-${mode}`][i].ms) / 1000));
  const steadyOne = marginal('one');
  const threadsShares = samples[`${MANY}-processes`].map((s, i) => s.ms / samples[`${MANY}-all`][i].ms);
  const steadyAll = marginal('all');
  const set = (n) => ({
    files: n,
    oneMs: ms(`${n}-one`),
    allMs: ms(`${n}-all`),
    speedup: pairs(n),
    oneCores: cores(`${n}-one`),
    allCores: cores(`${n}-all`),
  });
  return {
    threads,
    rowsPerFile,
    startup: { oneMs: ms('one-one'), allMs: ms('one-all') },
    small: set(SCHOOLS),
    many: set(MANY),
    before: {
      rev: BEFORE_REV,
      oneMs: ms(`${BEFORE_SET}-one`),
      allMs: ms(`${BEFORE_SET}-all`),
      speedup: pairs(BEFORE_SET),
    },
    // Two threads' rate as a share of two processes' (the same files, the same round).
    processes: {
      ms: ms(`${MANY}-processes`),
      speedup: median(samples[`${MANY}-one`].map((s, i) => s.ms / samples[`${MANY}-processes`][i].ms)),
      threadsShare: median(threadsShares),
      threadsShares,
    },
    steady: {
      oneFilesPerSec: median(steadyOne),
      allFilesPerSec: median(steadyAll),
      speedup: median(steadyAll.map((all, i) => all / steadyOne[i])),
    },
  };
}

export async function runCli(data, runs, log = console.log) {
  const lote = await runLote(runs, log, path.dirname(data.x25.files.xlsx).replace(/x25$/, ''));
  const big = [];
  for (let run = 1; run <= runs; run++) big.push(await runNodeTimed([CLI, 'divergencias', data.x25.files.xlsx, '-o', '/dev/null']));
  return { ...lote, bigMs: median(big), bigRows: data.x25.rows };
}

/** Section 5's lote table and the sentence under it (also what `node bench/cli.mjs` prints). */
export function loteReport(cli) {
  const row = (name, n, msValue) => [name, fmt(msValue), fmt(n / (msValue / 1000), 1), fmt((n * cli.rowsPerFile) / (msValue / 1000))];
  const rows = [
    row('1 file, --concurrency 1 (the fixed cost)', 1, cli.startup.oneMs),
    row(`1 file, default (${cli.threads} threads)`, 1, cli.startup.allMs),
  ];
  for (const set of [cli.small, cli.many]) {
    rows.push(row(`${fmt(set.files)} files, --concurrency 1`, set.files, set.oneMs));
    rows.push(row(`${fmt(set.files)} files, default (${cli.threads} threads)`, set.files, set.allMs));
  }
  rows.push(
    row(`${fmt(cli.many.files)} files, two --concurrency 1 processes on ${fmt(cli.many.files / 2)} each`, cli.many.files, cli.processes.ms),
  );
  const { before } = cli;
  rows.push(row(`${fmt(cli.many.files)} files, --concurrency 1, CLI and core at ${before.rev}`, cli.many.files, before.oneMs));
  rows.push(row(`${fmt(cli.many.files)} files, default, CLI and core at ${before.rev}`, cli.many.files, before.allMs));
  return {
    rows,
    text:
      `Same-run speed-up, default against --concurrency 1: ${cli.small.speedup.toFixed(2)}× on ${fmt(cli.small.files)} files, ` +
      `${cli.many.speedup.toFixed(2)}× on ${fmt(cli.many.files)}; between the two (the fixed cost left out) ` +
      `${fmt(cli.steady.oneFilesPerSec, 1)} against ${fmt(cli.steady.allFilesPerSec, 1)} files/s, ${cli.steady.speedup.toFixed(2)}×. ` +
      `Two one-thread processes side by side, each on half of the 1,000 files: ${cli.processes.speedup.toFixed(2)}× one process; ` +
      `two threads in one process reach ${cli.processes.threadsShare.toFixed(2)} of their rate ` +
      `(each round: ${cli.processes.threadsShares.map((x) => x.toFixed(2)).join(', ')}). ` +
      `The --concurrency 1 run is not one core: its process keeps ${cli.many.oneCores.toFixed(2)} cores busy on average ` +
      `(V8's background compiler and GC, the thread that copies the output, libuv), the default ${cli.many.allCores.toFixed(2)}. ` +
      `The CLI and core at ${before.rev}, in the same rounds on 1,000 files: ${fmt(before.oneMs)} / ${fmt(before.allMs)} ms ` +
      `(one thread / default), ${before.speedup.toFixed(2)}×; now ${(before.oneMs / cli.many.oneMs).toFixed(2)}× / ` +
      `${(before.allMs / cli.many.allMs).toFixed(2)}× faster.`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const cli = await runLote(Number(process.argv[2] ?? 3));
  const { rows, text } = loteReport(cli);
  console.log(
    `load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log(table(['run', 'time ms', 'files/s', 'return rows/s'], rows));
  console.log(`\n${text}`);
}
