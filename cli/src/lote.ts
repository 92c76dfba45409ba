// `censo lote <pasta>`: every return under a folder (folder.ts), on the service's worker-thread
// pool, combined into one result whose first column is the file's path relative to the folder.
// Files run in parallel but are written in a stable order (sorted paths). A file that fails, for
// whatever reason, is one line on stderr and the batch goes on; only -o failing stops it.
import { createReadStream, mkdtempSync, rmSync, type Stats } from 'node:fs';
import { readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import {
  cellValues,
  createJobPool,
  csvLine,
  DIVERGENCIA_COLUMNS,
  writeXlsx,
  type Divergencia,
  type VocabularyAdditions,
} from '@censo/shared';
import { BadUsage, quote, reasonOf } from './failures.js';
import { identityOf, listReturns, type ReturnFile } from './folder.js';
import { openOutput, writeFailure, type Output } from './output.js';

export type LoteFormat = 'csv' | 'json' | 'xlsx';

export interface LoteOptions {
  readonly folder: string;
  readonly format: LoteFormat;
  readonly output: string | undefined;
  /** Files at a time (already within `maxConcurrency()`); default the CPU count. */
  readonly concurrency: number | undefined;
  readonly quiet: boolean;
  readonly vocabulary: VocabularyAdditions;
}

export interface LoteSummary {
  /** Returns whose divergences were written. */
  readonly read: number;
  /** Returns (and subfolders) that could not be used, each reported on stderr. */
  readonly failed: number;
  /** Divergences written (the header not counted). */
  readonly rows: number;
}

/**
 * The most files at a time: each one is a thread with up to 512 MiB of heap (JOB_HEAP_LIMIT_MB),
 * and the work is CPU-bound, so threads beyond the cores only add memory (64 took 1.24 GB).
 * Twice the cores leaves room for files that wait on the disk or a network share.
 */
export function maxConcurrency(): number {
  return os.availableParallelism() * 2;
}

const COLUMNS = ['arquivo', ...DIVERGENCIA_COLUMNS];

export interface FileResult {
  readonly name: string;
  readonly divergencias: readonly Divergencia[];
}

type Outcome = { readonly ok: true; readonly resultPath: string } | { readonly ok: false; readonly erro: string };

interface Progress {
  tick(): void;
  /** A line for stderr; on a terminal it goes above the bar. */
  say(line: string): void;
  stop(): void;
}

/** Files/s on a terminal's stderr; nothing when stderr is not a terminal or with --quiet. */
function progress(total: number, quiet: boolean): Progress {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  if (quiet || !process.stderr.isTTY) return { tick: () => {}, say, stop: () => {} };
  const started = Date.now();
  // A MultiBar for its one bar: it writes log lines above the bar. A SingleBar restores the
  // cursor to where it started when it stops, so the summary overwrote lines written meanwhile.
  const bars = new cliProgress.MultiBar(
    { stream: process.stderr, format: 'Arquivos {bar} {value}/{total} | {rate} arq/s | falta {eta_formatted}', hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  const bar = bars.create(total, 0, { rate: '0.0' });
  let done = 0;
  let active = true;
  return {
    // Jobs cancelled after a failed write still end (and tick) once the bar is gone.
    tick: () => {
      if (active) bar.update(++done, { rate: (done / Math.max(0.001, (Date.now() - started) / 1000)).toFixed(1) });
    },
    say: (line) => (active ? bars.log(`${line}\n`) : say(line)),
    stop: () => {
      if (!active) return;
      active = false;
      bars.update(); // writes the lines still waiting for the next redraw
      bars.stop();
    },
  };
}

/** -o naming one of the returns would truncate it before it is read. */
export async function refuseInputAsOutput(output: string, files: readonly ReturnFile[]): Promise<void> {
  const info: Stats | null = await stat(output).catch(() => null);
  if (info === null) return;
  const identity = identityOf(info);
  const input = files.find((file) => file.identity === identity);
  if (input) throw new BadUsage(`-o ${quote(output)} é o retorno ${quote(input.name)} da pasta: escolha outro arquivo de saída.`);
}

export async function lote(options: LoteOptions): Promise<LoteSummary> {
  const { files, problems } = await listReturns(options.folder);
  if (options.output !== undefined) await refuseInputAsOutput(options.output, files);
  const out = await openOutput(options.output);
  // From here to the handlers, one synchronous stretch: a signal is handled on the event loop, so
  // none can come between the scratch folder's creation and the handler that removes it.
  const work = mkdtempSync(path.join(os.tmpdir(), 'censo-lote-'));
  const bar = progress(files.length, options.quiet);
  // Ctrl-C (or a cron's SIGTERM) ends the process without running `finally`: the bar gives the
  // terminal its cursor back, the scratch folder goes, then the signal is raised again so the
  // exit status still says how it ended.
  const interrupted = (signal: NodeJS.Signals) => {
    bar.stop();
    rmSync(work, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const pool = createJobPool({
    threads: options.concurrency ?? os.availableParallelism(),
    maxQueue: files.length,
    vocabulary: options.vocabulary,
  });
  let read = 0;
  let failed = problems.length;
  let rows = 0;
  const report = (name: string, erro: string) => bar.say(`censo: ${quote(name)}: ${erro}`);
  for (const problem of problems) report(problem.name, problem.erro);

  // Every file is queued at once (the pool runs `threads` at a time), each job's outcome settled
  // the moment it ends: a failure waiting for its turn in the in-order writing below must not
  // be a rejection nobody handles yet (that crashed the whole batch).
  const outcomes = files.map((file, i): Promise<Outcome> => {
    const resultPath = path.join(work, `${i}.json`);
    return pool
      .run({ kind: 'divergencias', retorno: { path: file.path, format: file.format }, format: 'json', resultPath })
      .then(
        (result): Outcome => (result.ok ? { ok: true, resultPath } : { ok: false, erro: result.erro }),
        (err: unknown): Outcome => ({ ok: false, erro: `Não foi possível ler o arquivo: ${reasonOf(err)}.` }),
      )
      .finally(bar.tick);
  });

  // Set when the write fails: the jobs cancelled then are not the files' failures.
  let stopped = false;
  async function* results(): AsyncGenerator<FileResult> {
    for (const [i, file] of files.entries()) {
      const outcome = await outcomes[i]!;
      if (stopped) return;
      if (!outcome.ok) {
        failed++;
        report(file.name, outcome.erro);
        continue;
      }
      const { divergencias } = JSON.parse(await readFile(outcome.resultPath, 'utf8')) as { divergencias: Divergencia[] };
      await rm(outcome.resultPath, { force: true });
      read++;
      rows += divergencias.length;
      yield { name: file.name, divergencias };
    }
  }

  try {
    await write(options.format, results(), out, work);
  } catch (err) {
    stopped = true;
    await out.discard();
    if (out.failed() !== undefined) throw writeFailure(options.output, out.failed());
    throw err;
  } finally {
    bar.stop();
    // Jobs still queued or running after a failed write are cancelled; their outcomes are settled.
    await pool.close();
    await rm(work, { recursive: true, force: true });
    process.removeListener('SIGINT', interrupted);
    process.removeListener('SIGTERM', interrupted);
  }
  return { read, failed, rows };
}

/** The combined result in `format` (also `lote --servidor`'s, so both write the same bytes). */
export async function write(format: LoteFormat, results: AsyncIterable<FileResult>, out: Output, work: string): Promise<void> {
  const end = out.stream !== process.stdout;
  if (format === 'xlsx') {
    // The zip is written to a file first: writeXlsx streams into a path, and -o may be stdout.
    const workbook = path.join(work, 'divergencias.xlsx');
    await writeXlsx(workbook, 'divergencias', COLUMNS, xlsxRows(results));
    await pipeline(createReadStream(workbook), out.stream, { end });
  } else {
    await pipeline(Readable.from(format === 'csv' ? csvText(results) : jsonText(results)), out.stream, { end });
  }
}

async function* csvText(results: AsyncIterable<FileResult>): AsyncGenerator<string> {
  yield csvLine(COLUMNS);
  for await (const { name, divergencias } of results) {
    let chunk = '';
    for (const d of divergencias) chunk += csvLine([name, ...cellValues(d, DIVERGENCIA_COLUMNS)]);
    if (chunk) yield chunk;
  }
}

async function* jsonText(results: AsyncIterable<FileResult>): AsyncGenerator<string> {
  yield '{"divergencias":[';
  let first = true;
  for await (const { name, divergencias } of results) {
    let chunk = '';
    for (const d of divergencias) {
      chunk += (first ? '' : ',') + JSON.stringify({ arquivo: name, ...d });
      first = false;
    }
    if (chunk) yield chunk;
  }
  yield ']}\n';
}

async function* xlsxRows(results: AsyncIterable<FileResult>): AsyncGenerator<string[]> {
  for await (const { name, divergencias } of results) {
    for (const d of divergencias) yield [name, ...cellValues(d, DIVERGENCIA_COLUMNS)];
  }
}
