// `censo lote <pasta>`: every return under a folder (folder.ts), on the service's worker-thread
// pool, combined into one result whose first column is the file's path relative to the folder.
// Files run in parallel but are written in a stable order (sorted paths). A file that fails, for
// whatever reason, is one line on stderr and the batch goes on; only -o failing stops it. An
// earlier output of the project among the returns is passed over (own-output.ts), and a folder
// with no return at all is an error, not an empty result. The JSON and the workbook also list
// every file read, with its count of divergences, and every file that failed, with why (issue 50:
// a school with no divergence left has no row, and comparing rounds must still know it was read).
// The CSV's shape is fixed (SPEC §7.3), so it carries no such list.
import { createReadStream, type Stats } from 'node:fs';
import { readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type * as CliProgress from 'cli-progress';
import {
  createJobPool,
  csvLine,
  LOTE_ARQUIVO_PLANILHA,
  LOTE_COLUMNS,
  LOTE_XLSX_COLUMNS,
  loteCells,
  loteJsonItem,
  writeXlsxBook,
  type Divergencia,
  type LoteFormat,
  type VocabularyAdditions,
} from '@censo/shared/local';
import { deferred } from './deferred.js';
import { BadUsage, InputError, quote, reasonOf } from './failures.js';
import { identityOf, listReturns, type FolderListing, type Ignored, type ReturnFile } from './folder.js';
import { onInterrupt, scratchFolder } from './interrupt.js';
import { openOutput, type Output } from './output.js';
import { projectOutputNote } from './own-output.js';
import { ignoredText, type LoteSummary } from './summary.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const cliProgress = createRequire(import.meta.url)('cli-progress') as typeof CliProgress;

export type { LoteFormat, LoteSummary };

export interface LoteOptions {
  readonly folder: string;
  readonly format: LoteFormat;
  readonly output: string | undefined;
  /** Files at a time (already within `maxConcurrency()`); default the CPU count. */
  readonly concurrency: number | undefined;
  readonly quiet: boolean;
  readonly vocabulary: VocabularyAdditions;
  /** Only divergences of these kinds (`--dado`: the words of `chave`, `outro`); absent: all. */
  readonly dados?: readonly string[];
}

/** A file of the batch as the JSON and the workbook list it: read (with its divergences written) or failed (with why). */
export interface ArquivoLido {
  readonly arquivo: string;
  /** Divergences written for it; null when it failed. */
  readonly divergencias: number | null;
  readonly erro: string | null;
}

/** The workbook's sheet of files (issue 50), its count a number. */
export const ARQUIVOS_SHEET = 'arquivos';
export const ARQUIVOS_XLSX_COLUMNS: readonly string[] = ['Arquivo', 'Divergências', 'Falha'];

/**
 * The most files at a time: each one is a thread with up to 512 MiB of heap (JOB_HEAP_LIMIT_MB),
 * and the work is CPU-bound, so threads beyond the cores only add memory (64 took 1.24 GB).
 * Twice the cores leaves room for files that wait on the disk or a network share.
 */
export function maxConcurrency(): number {
  return os.availableParallelism() * 2;
}

export interface FileResult {
  readonly name: string;
  readonly divergencias: readonly Divergencia[];
}

/** A file's text in the combined result's format: bytes [start, end) of `resultPath`. */
interface FileText {
  readonly resultPath: string;
  readonly start: number;
  readonly end: number;
  /** The whole result file, when it was read at once (texts()); else the range is streamed. */
  readonly whole?: Buffer;
}

type Outcome = (FileText & { readonly ok: true; readonly rows: number }) | { readonly ok: false; readonly erro: string };

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
  // forceRedraw: a log line clears the bar's line, and an unchanged bar is otherwise not drawn
  // again (a failure reported after the last tick left no bar at all).
  const bars = new cliProgress.MultiBar(
    {
      stream: process.stderr,
      format: 'Arquivos {bar} {value}/{total} | {rate} arq/s | falta {eta_formatted}',
      hideCursor: true,
      forceRedraw: true,
    },
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

/**
 * -o naming one of the listed returns (by any path): an earlier result of this command is left
 * out of the batch (it is about to be replaced, and it is not a return); a return is refused,
 * since opening -o would truncate it before it is read.
 */
export async function setOutputApart(output: string, listing: FolderListing): Promise<FolderListing> {
  const info: Stats | null = await stat(output).catch(() => null);
  if (info === null) return listing;
  const identity = identityOf(info);
  const input = listing.files.find((file) => file.identity === identity);
  if (!input) return listing;
  const note = await projectOutputNote(input.path);
  if (note === null) {
    throw new BadUsage(`-o ${quote(output)} é o retorno ${quote(input.name)} da pasta: escolha outro arquivo de saída.`);
  }
  return {
    files: listing.files.filter((file) => file !== input),
    problems: listing.problems,
    ignored: [...listing.ignored, { name: input.name, note }],
  };
}

/** The folder's listing with -o set apart; a folder without a single return is an error (exit 1). */
export async function returnsToRead(folder: string, output: string | undefined): Promise<FolderListing> {
  let listing = await listReturns(folder);
  if (output !== undefined) listing = await setOutputApart(output, listing);
  if (listing.files.length === 0) throw noReturns(folder, listing);
  return listing;
}

/** `Nenhum retorno (.json ou .xlsx) em "x".`, naming what the folder does hold; its problems go first. */
export function noReturns(folder: string, listing: FolderListing): InputError {
  for (const problem of listing.problems) process.stderr.write(`censo: ${quote(problem.name)}: ${problem.erro}\n`);
  const ignored = listing.ignored.length > 0 ? ` Ignorados: ${ignoredText(listing.ignored)}.` : '';
  return new InputError(`Nenhum retorno (.json ou .xlsx) em ${quote(folder)}.${ignored}`);
}

/** Failed returns and unreadable subfolders, as the summary counts them; every file, as the outputs list them. */
export class Failures {
  readonly failed: string[] = [];
  readonly folders: string[] = [];
  readonly ignored: Ignored[];
  readonly arquivos: ArquivoLido[] = [];

  constructor(
    listing: FolderListing,
    private readonly report: (name: string, erro: string) => void,
  ) {
    this.ignored = [...listing.ignored];
    for (const problem of listing.problems) {
      if (problem.kind === 'pasta') {
        this.folders.push(problem.name);
        report(problem.name, problem.erro);
      } else this.fail(problem.name, problem.erro);
    }
  }

  /** A return that could not be used: counted, listed with why, and said on stderr. */
  fail(name: string, erro: string): void {
    this.failed.push(name);
    this.arquivos.push({ arquivo: name, divergencias: null, erro });
    this.report(name, erro);
  }

  /** A return read, with the divergences written for it. */
  read(name: string, divergencias: number): void {
    this.arquivos.push({ arquivo: name, divergencias, erro: null });
  }
}

/**
 * A return that failed as unreadable may be an earlier output of the project under another name
 * (`divergencias-marco.xlsx`, a `censo divergencias` saved in a school's folder): then it is
 * ignored, not a failure; the note says what it is. Only files the job could not use (or found
 * empty) are looked at, so the returns themselves cost nothing more.
 */
export async function ownOutputNote(file: ReturnFile, erro: string): Promise<string | null> {
  return erro.startsWith('Arquivo retorno ilegível') ? await projectOutputNote(file.path) : null;
}

export async function lote(options: LoteOptions): Promise<LoteSummary> {
  const threads = options.concurrency ?? os.availableParallelism();
  // Started first: each thread loads the job module (a good part of a small folder's time) while
  // the folder is walked. In flight at once: a batch per thread, one waiting, and a failed
  // batch's files run again one by one (runBatch).
  const pool = createJobPool({
    threads,
    maxQueue: (threads + 1) * BATCH_MAX_FILES,
    vocabulary: options.vocabulary,
    startThreads: true,
  });
  let out: Output;
  let listing: FolderListing;
  try {
    listing = await returnsToRead(options.folder, options.output);
    out = await openOutput(options.output);
  } catch (err) {
    await pool.close();
    throw err;
  }
  const { files } = listing;
  const scratch = scratchFolder('censo-lote-');
  const work = scratch.path;
  const bar = progress(files.length, options.quiet);
  const forgetBar = onInterrupt(() => bar.stop());
  const batches = batchesOf(files, threads);
  let read = 0;
  let rows = 0;
  const report = (name: string, erro: string) => bar.say(`censo: ${quote(name)}: ${erro}`);
  const failures = new Failures(listing, report);
  // Set when the write fails: the jobs cancelled then are not the files' failures.
  let stopped = false;

  // A batch's files in order, each outcome settled: a failure waiting for its turn in the in-order
  // writing below must not be a rejection nobody handles yet (that crashed the whole batch). A
  // batch that fails as a whole (its thread died) is run again a file at a time, so one bad file
  // never costs the others.
  const unreadable = (err: unknown) => `Não foi possível ler o arquivo: ${reasonOf(err)}.`;
  const runBatch = (batch: readonly ReturnFile[], resultPath: string): Promise<Outcome[]> =>
    pool
      .runLote({
        files: batch.map(({ name, path, format }) => ({ name, path, format })),
        format: options.format,
        resultPath,
        ...(options.dados ? { dados: options.dados } : {}),
      })
      .then(
        (outcomes) =>
          outcomes.map((o): Outcome => (o.ok ? { ...o, resultPath } : { ok: false, erro: 'erro' in o ? o.erro : unreadable(o.thrown) })),
        async (err: unknown): Promise<Outcome[]> =>
          batch.length > 1 && !stopped
            ? (await Promise.all(batch.map((file, j) => runBatch([file], `${resultPath}.${j}`)))).flat()
            : batch.map(() => ({ ok: false, erro: unreadable(err) })),
      );
  // Batches go to the pool in output order, a thread's worth and one more at a time: queued all at
  // once, piscina handed them out of order (a task it could not place at once went to the back),
  // so the output waited for early batches until the end and was then copied while both threads
  // sat idle. The one waiting is taken by the first thread to finish, with no round trip.
  const outcomes = batches.map(() => deferred<Outcome[]>());
  let started = 0;
  let running = 0;
  const startBatches = () => {
    while (running < threads + 1 && started < batches.length && !stopped) {
      const i = started++;
      const batch = batches[i]!;
      running++;
      outcomes[i]!.resolve(
        runBatch(batch, path.join(work, `${i}.txt`)).finally(() => {
          running--;
          for (let n = 0; n < batch.length; n++) bar.tick();
          startBatches();
        }),
      );
    }
  };
  startBatches();

  async function* texts(): AsyncGenerator<FileText> {
    let whole: { readonly path: string; readonly bytes: Buffer | undefined } | undefined;
    for (const [i, batch] of batches.entries()) {
      const settled = await outcomes[i]!.promise;
      for (const [j, file] of batch.entries()) {
        if (stopped) return;
        const outcome = settled[j]!;
        if (!outcome.ok) {
          const note = await ownOutputNote(file, outcome.erro);
          if (note !== null) failures.ignored.push({ name: file.name, note });
          else failures.fail(file.name, outcome.erro);
          continue;
        }
        // An earlier result with no rows is a readable (empty) list: set apart like the others.
        const note = outcome.rows === 0 ? await projectOutputNote(file.path) : null;
        if (note !== null) {
          failures.ignored.push({ name: file.name, note });
          continue;
        }
        read++;
        rows += outcome.rows;
        failures.read(file.name, outcome.rows);
        if (outcome.end <= outcome.start) continue;
        if (whole?.path !== outcome.resultPath) {
          // A batch's file is read at once (one read instead of an open, reads and a close per
          // school-sized file on the thread that feeds the job threads), unless it is large.
          const size = Math.max(...settled.map((o) => (o.ok && o.resultPath === outcome.resultPath ? o.end : 0)));
          whole = { path: outcome.resultPath, bytes: size <= WHOLE_RESULT_BYTES ? await readFile(outcome.resultPath) : undefined };
        }
        yield whole.bytes ? { ...outcome, whole: whole.bytes } : outcome;
      }
      for (const resultPath of new Set(settled.flatMap((o) => (o.ok ? [o.resultPath] : [])))) await rm(resultPath, { force: true });
    }
  }

  try {
    await writeOut(
      options.format === 'xlsx'
        ? { rows: copiedRows(texts()) }
        : { text: options.format === 'csv' ? copiedCsv(texts()) : copiedJson(texts(), failures.arquivos) },
      out,
      work,
      failures.arquivos,
    );
  } catch (err) {
    stopped = true;
    throw await out.abandon(err);
  } finally {
    bar.stop();
    // Jobs still queued or running after a failed write are cancelled; their outcomes are settled.
    forgetBar();
    await pool.close();
    await scratch.remove();
  }
  return { read, rows, failed: failures.failed, folders: failures.folders, ignored: failures.ignored };
}

/** A batch's input is at most this many bytes of returns, and this many files. */
const BATCH_MAX_BYTES = 4 * 1024 * 1024;
const BATCH_MAX_FILES = 8;

/**
 * Consecutive files (in output order) handed to a thread as one task. A task per school-sized
 * file spent as much time in hand-overs as in reading; batches stay small enough that every
 * thread gets several and the output starts early. Toward the end a batch is at most a
 * 1/(2 × threads) share of what remains (down to one file), so the threads end together instead
 * of one finishing a full batch alone.
 */
export function batchesOf(files: readonly ReturnFile[], threads: number): ReturnFile[][] {
  const share = 2 * Math.max(1, threads);
  let remainingBytes = files.reduce((sum, file) => sum + file.size, 0);
  const target = Math.min(BATCH_MAX_BYTES, remainingBytes / (share * 4));
  const batches: ReturnFile[][] = [];
  let current: ReturnFile[] = [];
  let bytes = 0;
  let maxFiles = 0;
  let maxBytes = 0;
  for (const [i, file] of files.entries()) {
    if (current.length > 0 && (bytes + file.size > maxBytes || current.length >= maxFiles)) {
      batches.push(current);
      remainingBytes -= bytes;
      current = [];
      bytes = 0;
    }
    if (current.length === 0) {
      maxFiles = Math.min(BATCH_MAX_FILES, Math.ceil((files.length - i) / share));
      maxBytes = Math.min(target, remainingBytes / share);
    }
    current.push(file);
    bytes += file.size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** A batch's result file up to this size is read at once. */
const WHOLE_RESULT_BYTES = 32 * 1024 * 1024;

const JSON_OPEN = '{"divergencias":[';

/** The end of the combined JSON: the list of files (complete once the divergences are written). */
function jsonClose(arquivos: readonly ArquivoLido[]): string {
  return `],"arquivos":[${arquivos.map((arquivo) => JSON.stringify(arquivo)).join(',')}]}\n`;
}

/**
 * The combined result in `format` (also `lote --servidor`'s, so both write the same bytes);
 * `arquivos` is filled by `results` as it is read, and listed after the divergences.
 */
export async function write(
  format: LoteFormat,
  results: AsyncIterable<FileResult>,
  out: Output,
  work: string,
  arquivos: readonly ArquivoLido[],
): Promise<void> {
  await writeOut(
    format === 'xlsx' ? { rows: xlsxRows(results) } : { text: format === 'csv' ? csvText(results) : jsonText(results, arquivos) },
    out,
    work,
    arquivos,
  );
}

/** The sheet of files, read once the divergences' sheets are written (the list is complete by then). */
async function* arquivosRows(arquivos: readonly ArquivoLido[]): AsyncGenerator<(string | number)[]> {
  for (const { arquivo, divergencias, erro } of arquivos) yield [arquivo, divergencias ?? '', erro ?? ''];
}

async function writeOut(
  source: { readonly rows: AsyncIterable<string[]> } | { readonly text: AsyncIterable<string | Buffer> },
  out: Output,
  work: string,
  arquivos: readonly ArquivoLido[],
): Promise<void> {
  if ('rows' in source) {
    // The zip is written to a file first: writeXlsxBook streams into a path, and -o may be stdout.
    const workbook = path.join(work, 'divergencias.xlsx');
    await writeXlsxBook(workbook, [
      { name: 'divergencias', columns: LOTE_XLSX_COLUMNS, rows: source.rows },
      { name: ARQUIVOS_SHEET, columns: ARQUIVOS_XLSX_COLUMNS, rows: arquivosRows(arquivos) },
    ]);
    await out.write(createReadStream(workbook));
  } else {
    await out.write(Readable.from(source.text));
  }
}

async function* csvText(results: AsyncIterable<FileResult>): AsyncGenerator<string> {
  yield csvLine(LOTE_COLUMNS);
  for await (const { name, divergencias } of results) {
    let chunk = '';
    for (const d of divergencias) chunk += csvLine(loteCells(name, d));
    if (chunk) yield chunk;
  }
}

async function* jsonText(results: AsyncIterable<FileResult>, arquivos: readonly ArquivoLido[]): AsyncGenerator<string> {
  yield JSON_OPEN;
  let first = true;
  for await (const { name, divergencias } of results) {
    let chunk = '';
    for (const d of divergencias) {
      chunk += (first ? '' : ',') + loteJsonItem(name, d);
      first = false;
    }
    if (chunk) yield chunk;
  }
  yield jsonClose(arquivos);
}

/** The workbook's rows in words, as the job threads write them for the local lote (runLoteBatch). */
async function* xlsxRows(results: AsyncIterable<FileResult>): AsyncGenerator<string[]> {
  for await (const { name, divergencias } of results) {
    for (const d of divergencias) yield LOTE_ARQUIVO_PLANILHA.cells({ arquivo: name, ...d });
  }
}

/** The bytes a job thread wrote for one file (runLoteBatch). */
function bytesOf(text: FileText): Iterable<Buffer> | AsyncIterable<Buffer> {
  if (text.whole) return [text.whole.subarray(text.start, text.end)];
  return createReadStream(text.resultPath, { start: text.start, end: text.end - 1 });
}

async function* copiedCsv(texts: AsyncIterable<FileText>): AsyncGenerator<string | Buffer> {
  yield csvLine(LOTE_COLUMNS);
  for await (const text of texts) yield* bytesOf(text);
}

async function* copiedJson(texts: AsyncIterable<FileText>, arquivos: readonly ArquivoLido[]): AsyncGenerator<string | Buffer> {
  yield JSON_OPEN;
  let first = true;
  for await (const text of texts) {
    if (!first) yield ',';
    first = false;
    yield* bytesOf(text);
  }
  yield jsonClose(arquivos);
}

async function* copiedRows(texts: AsyncIterable<FileText>): AsyncGenerator<string[]> {
  for await (const text of texts) {
    const chunks: Buffer[] = [];
    for await (const chunk of bytesOf(text)) chunks.push(chunk);
    yield* JSON.parse(Buffer.concat(chunks).toString('utf8')) as string[][];
  }
}
