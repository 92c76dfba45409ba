// What one school's return costs as a job, in a process doing nothing else (issue 55: a worker's
// CPU a file against the local `censo lote`'s). The same `runJob` the worker's threads run, on
// one thread, back to back: as a direct task (its JSON answer alone) and as a batch's task (the
// JSON answer and its lines of the batch's combined CSV, SPEC §7.3), the two alternating in
// fresh processes so that neither gets the quieter minutes. CPU is the process's own
// (process.cpuUsage: every thread, the garbage collector's included), over `files` jobs after a
// warm-up; each job's outputs are removed after it, as a finished task's are when it expires.
//
//   node bench/job-cost.mjs <return> [--files N] [--rounds N]   prints the JSON of measureJobCost
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DATA, ROOT, median, runNodeJson } from './lib.mjs';

const SELF = fileURLToPath(import.meta.url);
const WARMUP = 20;
/** The two kinds of job a worker runs for a divergencias-rf task. */
const JOB_MODES = ['direta', 'lote'];

/** In a child process: `files` jobs of `mode` on `source`, their CPU and wall time a file. */
async function child(mode, source, files) {
  const { runJob } = await import(pathToFileURL(path.join(ROOT, 'shared/dist/index.js')).href);
  const dir = path.join(DATA, `job-cost-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const once = async () => {
    const resultPath = path.join(dir, 'resultado');
    const data = {
      kind: 'divergencias',
      retorno: { path: source, format: 'xlsx' },
      format: 'json',
      resultPath,
      ...(mode === 'lote' ? { batchLines: ['11000000', path.basename(source)] } : {}),
    };
    const result = await runJob(data);
    if (!result.ok) throw new Error(`job failed: ${JSON.stringify(result)}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    return result.count;
  };
  try {
    for (let i = 0; i < WARMUP; i++) await once();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let divergencias = 0;
    for (let i = 0; i < files; i++) divergencias = await once();
    const cpu = process.cpuUsage(cpu0);
    return {
      mode,
      files,
      divergencias,
      cpuMsPerFile: (cpu.user + cpu.system) / 1000 / files,
      systemMsPerFile: cpu.system / 1000 / files,
      wallMsPerFile: (performance.now() - t0) / files,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Each mode `rounds` times, alternating, `files` jobs a round: the median CPU a file of each (the
 * batch's lines cost the difference) and every round's figures.
 */
export async function measureJobCost({ source, files = 300, rounds = 3 }) {
  const runs = Object.fromEntries(JOB_MODES.map((mode) => [mode, []]));
  for (let round = 0; round < rounds; round++) {
    for (const mode of JOB_MODES) {
      runs[mode].push(await runNodeJson([SELF, '--child', mode, source, String(files)], { timeoutMs: 600_000 }));
    }
  }
  const of = (mode, key) => median(runs[mode].map((r) => r[key]));
  const byMode = Object.fromEntries(
    JOB_MODES.map((mode) => [
      mode,
      { cpuMsPerFile: of(mode, 'cpuMsPerFile'), systemMsPerFile: of(mode, 'systemMsPerFile'), wallMsPerFile: of(mode, 'wallMsPerFile') },
    ]),
  );
  return { files, rounds, divergencias: runs.lote[0].divergencias, ...byMode, runs };
}

if (process.argv[1] && path.resolve(process.argv[1]) === SELF) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    console.log(JSON.stringify(await child(args[1], args[2], Number(args[3]))));
  } else {
    const option = (name, fallback) => {
      const i = args.indexOf(name);
      return i < 0 ? fallback : Number(args[i + 1]);
    };
    if (!args[0] || args[0].startsWith('--')) {
      console.error('usage: node bench/job-cost.mjs <return.xlsx> [--files N] [--rounds N]');
      process.exit(2);
    }
    console.log(
      JSON.stringify(
        await measureJobCost({ source: path.resolve(args[0]), files: option('--files', 300), rounds: option('--rounds', 3) }),
        null,
        2,
      ),
    );
  }
}
