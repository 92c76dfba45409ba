// `censo lote <pasta>`: every return under a folder, on the service's worker-thread pool, combined
// into one result whose first column is the file's path relative to the folder. Files run in
// parallel but are written in a stable order (sorted paths); a file that fails is reported on
// stderr and skipped.
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { once } from 'node:events';
import cliProgress from 'cli-progress';
import {
  csvLine,
  cellValues,
  createJobPool,
  DIVERGENCIA_COLUMNS,
  type Divergencia,
  type JobResult,
  type VocabularyAdditions,
} from '@censo/shared';
import { InputError } from './failures.js';
import { retornoFormat } from './inputs.js';

export interface LoteOptions {
  readonly folder: string;
  readonly format: 'csv' | 'json';
  readonly output: string | undefined;
  readonly concurrency: number | undefined;
  readonly quiet: boolean;
  readonly vocabulary: VocabularyAdditions;
}

/** Returns under `folder`, recursively, as sorted paths relative to it (with `/`). */
export async function findReturns(folder: string): Promise<string[]> {
  const info = await stat(folder).catch(() => null);
  if (!info?.isDirectory()) throw new InputError(`Pasta não encontrada: ${folder}.`);
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && retornoFormat(entry.name) !== null)
    .map((entry) => path.relative(folder, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function write(out: Writable, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/** Files/s on a terminal's stderr; nothing when stderr is not a terminal or with --quiet. */
function progress(total: number, quiet: boolean) {
  if (quiet || !process.stderr.isTTY) return { tick: () => {}, stop: () => {} };
  const started = Date.now();
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: 'Arquivos {bar} {value}/{total} | {rate} arq/s | falta {eta_formatted}', hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { rate: '0.0' });
  let done = 0;
  return {
    tick: () => bar.update(++done, { rate: (done / Math.max(0.001, (Date.now() - started) / 1000)).toFixed(1) }),
    stop: () => bar.stop(),
  };
}

/** Runs the folder; returns how many files failed. */
export async function lote(options: LoteOptions): Promise<number> {
  const files = await findReturns(options.folder);
  const threads = options.concurrency ?? os.availableParallelism();
  const pool = createJobPool({ threads, maxQueue: files.length, vocabulary: options.vocabulary });
  const work = await mkdtemp(path.join(os.tmpdir(), 'censo-lote-'));
  const out: Writable = options.output === undefined ? process.stdout : createWriteStream(options.output);
  const bar = progress(files.length, options.quiet);
  let failed = 0;
  try {
    // Every file is queued at once; the pool runs `threads` of them at a time.
    const jobs = files.map((file, i): Promise<JobResult> => {
      const resultPath = path.join(work, `${i}.json`);
      const run = pool.run({
        kind: 'divergencias',
        retorno: { path: path.join(options.folder, file), format: retornoFormat(file)! },
        format: 'json',
        resultPath,
      });
      return run.finally(bar.tick);
    });
    await write(out, options.format === 'csv' ? csvLine(['arquivo', ...DIVERGENCIA_COLUMNS]) : '{"divergencias":[');
    let first = true;
    for (const [i, file] of files.entries()) {
      const result = await jobs[i]!.catch((err: unknown): JobResult => ({
        ok: false,
        status: 400,
        code: 'ERROR',
        erro: String((err as Error).message ?? err),
      }));
      if (!result.ok) {
        failed++;
        process.stderr.write(`censo: ${file}: ${result.erro}\n`);
        continue;
      }
      const resultPath = path.join(work, `${i}.json`);
      const { divergencias } = JSON.parse(await readFile(resultPath, 'utf8')) as { divergencias: Divergencia[] };
      await rm(resultPath, { force: true });
      let chunk = '';
      for (const d of divergencias) {
        if (options.format === 'csv') chunk += csvLine([file, ...cellValues(d, DIVERGENCIA_COLUMNS)]);
        else {
          chunk += (first ? '' : ',') + JSON.stringify({ arquivo: file, ...d });
          first = false;
        }
      }
      if (chunk) await write(out, chunk);
    }
    if (options.format === 'json') await write(out, ']}\n');
  } finally {
    bar.stop();
    await pool.close();
    await rm(work, { recursive: true, force: true });
    if (out !== process.stdout) {
      out.end();
      await once(out, 'close');
    }
  }
  return failed;
}
