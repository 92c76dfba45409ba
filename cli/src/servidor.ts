// `censo lote <pasta> --servidor <url>` (SPEC §7.5): the folder sent to a censo-api as one batch,
// then the same combined output as the local `lote` (its own writer, lote.ts `write`). A rerun
// resumes: the batch is created with an Idempotency-Key derived from the folder's files (the same
// folder finds its batch again), the files the batch already holds are not sent again, and each
// file goes with an Idempotency-Key made of its SHA-256 and its path's (a file whose 202 was lost
// is not run twice). `--novo-lote` sends the folder as a new batch instead.
//
// The files go several per request (issue 35: one request per file cost the service most of its
// CPU): in path order, up to GROUP_FILES files and GROUP_BYTES bytes a request, each request under
// an Idempotency-Key made of its files' paths and SHA-256 (a rerun that sends the same remaining
// files finds the same keys). A request of one file is sent exactly as before, under the file's
// own key. A request of several that the service refuses (400, 413) is sent again one file at a
// time, so that the refused file is reported as before and the others go on; when each of its
// files is then taken alone, the service is one from before several files per request (it answers
// 400 to a second `retorno`), and the rest of the folder goes one file per request.
//
// A batch found again is checked before any of it is used (issue 33): whoever can create a batch
// under the same key (the same principal) can put a task for one of the folder's paths in it with
// other bytes. Every task adopted must hold exactly the local file (its monitor's `arquivos`,
// SPEC §7.1); one that does not makes the whole batch refused, and none of its rows is written.
import { createHash } from 'node:crypto';
import { createReadStream, openAsBlob } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { getPriority, setPriority } from 'node:os';
import type * as CliProgress from 'cli-progress';
import { BATCH_NICENESS, csvLine, LOTE_COLUMNS, ofDados, type Divergencia } from '@censo/shared/local';
import { ApiClient, BUSY_RETRIES, isBusy, retryAfterMs, type ServerOptions } from './api-client.js';
import { withoutSecondField } from './combined-csv.js';
import { deferred } from './deferred.js';
import { InputError, quote } from './failures.js';
import { interruptNote, onInterrupt, scratchFolder } from './interrupt.js';
import { Failures, noReturns, returnsToRead, write, type FileResult, type LoteFormat, type LoteSummary } from './lote.js';
import { openOutput } from './output.js';
import { projectOutputNote } from './own-output.js';
import { type FolderListing, type ReturnFile } from './folder.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const cliProgress = createRequire(import.meta.url)('cli-progress') as typeof CliProgress;

export interface LoteServidorOptions extends ServerOptions {
  readonly folder: string;
  readonly format: LoteFormat;
  readonly output: string | undefined;
  /** Requests sending files at the same time (default 2). */
  readonly concurrency: number | undefined;
  readonly quiet: boolean;
  /** A new batch, never one found again by the folder's key. */
  readonly novoLote: boolean;
  /** Only divergences of these kinds (`--dado`); absent: all. */
  readonly dados?: readonly string[];
}

interface Arquivo {
  readonly campo: string;
  readonly nome: string;
  readonly bytes: number;
  readonly sha256: string;
}

interface Tarefa {
  readonly id: string;
  readonly rota: string;
  readonly estado: string;
  readonly referencia: string | null;
  readonly erro: { status: number; erro: string } | null;
  /** Absent from a service older than SPEC §7.1's `arquivos`. */
  readonly arquivos?: readonly Arquivo[];
}

type Contagens = Record<'total' | 'aguardando' | 'processando' | 'concluida' | 'falhou' | 'cancelada', number>;

interface Lote {
  readonly id: string;
  readonly estado: string;
  readonly tarefas: Contagens;
}

/** The first wait for the batch's end once every file is sent (then doubling, up to its Retry-After). */
const FIRST_LOOK_MS = 100;
/** Pages of the batch's task list read at most (1000 tasks each). */
const MAX_PAGES = 1_000;
/** Requests sending files at the same time, unless -c says otherwise. */
// One: the tasks are then made in path order, and a CSV is read back in one request (combinedCsv).
const DEFAULT_CONCURRENCY = 1;
/** Files one request carries at most (the service takes up to 100), and their bytes: a larger file goes alone. */
const GROUP_FILES = 50;
const GROUP_BYTES = 16 * 1024 * 1024;

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A bar on a terminal's stderr, nothing otherwise or with --quiet. */
function bar(quiet: boolean, format: string) {
  if (quiet || !process.stderr.isTTY) return { start: () => {}, update: () => {}, stop: () => {} };
  const progress = new cliProgress.SingleBar({ stream: process.stderr, format, hideCursor: true }, cliProgress.Presets.shades_classic);
  return {
    start: (total: number, payload: object) => progress.start(total, 0, payload),
    update: (value: number, payload: object) => progress.update(value, payload),
    stop: () => progress.stop(),
  };
}

/**
 * Every task of the batch, a page at a time: a caller keeps what it needs of each, never the
 * 50,000 monitors of a state's batch at once (held whole, they grew the CLI by 40 MiB at the end).
 */
async function* batchTasks(servidor: ApiClient, lote: string): AsyncGenerator<Tarefa> {
  let cursor: string | null = null;
  for (let pages = 0; pages < MAX_PAGES && (pages === 0 || cursor !== null); pages++) {
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page: { tarefas: Tarefa[]; next_cursor: string | null } = await servidor.json(
      await servidor.call('GET', `/api/lotes/${lote}/tarefas?limit=1000${query}`),
      (body) => Array.isArray(body.tarefas),
    );
    yield* page.tarefas;
    cursor = page.next_cursor;
  }
}

/**
 * The task holds exactly this file: a `divergencias-rf` upload of one `retorno` with these bytes
 * (a `txt` beside it, or another route, is not what this command sends).
 */
function holdsFile(task: Tarefa, digest: string): boolean {
  const arquivos = task.arquivos ?? [];
  return task.rota === 'divergencias-rf' && arquivos.length === 1 && arquivos[0]!.campo === 'retorno' && arquivos[0]!.sha256 === digest;
}

/** A file to send: its path below the folder, where it is, its SHA-256 and its size. */
interface FileToSend {
  readonly name: string;
  readonly path: string;
  readonly sha256: string;
  readonly bytes: number;
}

/** What sending a file gave: its task, or the service's refusal of this file. */
type Sent = Tarefa | { erro: string };

/** What is kept of a sent file: its task's id, or the service's refusal of it. */
type SentId = { readonly id: string } | { readonly erro: string };

/** The files, in path order, cut into requests: up to GROUP_FILES files and GROUP_BYTES bytes each. */
function groupsOf(files: readonly FileToSend[]): FileToSend[][] {
  const groups: FileToSend[][] = [];
  let current: FileToSend[] = [];
  let bytes = 0;
  for (const file of files) {
    if (current.length > 0 && (current.length >= GROUP_FILES || bytes + file.bytes > GROUP_BYTES)) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(file);
    bytes += file.bytes;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** An upload's busy answer: the service's (isBusy), or the same request still arriving from an earlier run (409 with Retry-After). */
async function uploadBusy(response: Response): Promise<boolean> {
  return (response.status === 409 && response.headers.has('retry-after')) || isBusy(response);
}

/**
 * Sends several files in one request, waiting out a busy service: their tasks, in the files'
 * order. 'recusado' when the service refused the request (400, 413: a file it refuses, or a
 * service that takes one file per request), 'ocupado' when it stayed busy: either way no task was
 * made, and the caller sends the files one by one.
 */
async function sendGroup(servidor: ApiClient, lote: string, group: readonly FileToSend[]): Promise<Tarefa[] | 'recusado' | 'ocupado'> {
  // Deterministic: a rerun that sends the same files finds the tasks a lost 202 made.
  const key = `censo-envio-${createHash('sha256')
    .update(group.map((file) => `${file.name}\0${file.sha256}\n`).join(''))
    .digest('hex')}`;
  const route = `/api/lotes/${lote}/divergencias-rf`;
  for (let attempt = 0; ; attempt++) {
    // Built for each attempt, as the request goes: the blobs are the files on disk, read while sent.
    const form = new FormData();
    for (const file of group) {
      form.append('referencia', file.name);
      form.append('retorno', await openAsBlob(file.path), file.name);
    }
    const response = await servidor.call('POST', route, { body: form, headers: { 'idempotency-key': key } });
    if (response.status === 202) {
      const { tarefas } = await servidor.body<{ tarefas?: Tarefa[] }>(response);
      // A task for each file, in their order (the i-th referencia is the i-th file's).
      if (!Array.isArray(tarefas) || tarefas.length !== group.length || tarefas.some((task, i) => task?.referencia !== group[i]!.name)) {
        throw new InputError(
          `o servidor ${servidor.base} não respondeu ao envio de ${group.length} arquivos com uma tarefa para cada um (HTTP 202 em ${route}): confira --servidor.`,
        );
      }
      return tarefas;
    }
    if (await uploadBusy(response)) {
      await response.arrayBuffer();
      if (attempt >= BUSY_RETRIES) return 'ocupado';
      await sleep(retryAfterMs(response));
      continue;
    }
    if (response.status === 400 || response.status === 413) {
      await response.arrayBuffer();
      return 'recusado';
    }
    throw await servidor.refusal(response);
  }
}

/** Sends one file, waiting out a busy service; the task, or the service's refusal of this file. */
async function send(servidor: ApiClient, lote: string, file: FileToSend): Promise<Sent> {
  // The file's SHA-256, and its path's: two schools may send byte-identical returns (an empty one).
  const key = `${file.sha256}-${createHash('sha256').update(file.name).digest('hex')}`;
  for (let attempt = 0; ; attempt++) {
    const form = new FormData();
    form.append('referencia', file.name);
    form.append('retorno', await openAsBlob(file.path), file.name);
    const response = await servidor.call('POST', `/api/lotes/${lote}/divergencias-rf`, { body: form, headers: { 'idempotency-key': key } });
    if (response.status === 202) return servidor.body<Tarefa>(response, (task) => typeof task.id === 'string');
    // Busy (the backlog, the rate limit, the same file still arriving from an earlier run): wait as told.
    if (attempt < BUSY_RETRIES && (await uploadBusy(response))) {
      await response.arrayBuffer();
      await sleep(retryAfterMs(response));
      continue;
    }
    // A file the service refuses (400, 413) is reported as the local lote reports a file it cannot
    // read; anything else (a wrong key, a closed batch) stops the command.
    if (response.status === 400 || response.status === 413) return { erro: (await servidor.erro(response)) ?? `HTTP ${response.status}` };
    throw await servidor.refusal(response);
  }
}

/** Why an ended task has no result (the service's words, as a per-file read gets them), or null. */
function failureOf(task: Tarefa): string | null {
  if (task.estado === 'falhou') return task.erro?.erro ?? `HTTP ${task.erro?.status}`;
  return task.estado === 'cancelada' ? 'Tarefa cancelada.' : null;
}

/** A file's answer from the service: its divergences, or why it has none. */
type Answer = { readonly divergencias: Divergencia[] } | { readonly erro: string };

/** Waits for a sent file's task to end and reads its result: one request per look. */
async function answerOf(servidor: ApiClient, sent: SentId): Promise<Answer> {
  if (!('id' in sent)) return sent;
  for (;;) {
    const response = await servidor.call('GET', `/api/tarefas/${sent.id}/resultado?format=json`);
    if (response.ok) {
      const body = await servidor.body<{ divergencias: Divergencia[] }>(response, (answer) => Array.isArray(answer.divergencias));
      return { divergencias: body.divergencias };
    }
    // 409 with Retry-After: still waiting or running. Without it (cancelled), and every other
    // status (the job's own 400/422, an expired task), the service's words are the file's failure.
    if (response.status === 409 && response.headers.has('retry-after')) {
      await response.arrayBuffer();
      await sleep(retryAfterMs(response));
      continue;
    }
    return { erro: (await servidor.erro(response)) ?? `HTTP ${response.status}` };
  }
}

/** Results read ahead of the writer, at most this many at once (each is one file's divergences). */
const READ_AHEAD = 8;

/** The batch to use: created, or found again by the folder's key (said on stderr either way). */
async function openBatch(
  servidor: ApiClient,
  options: { readonly nome: string; readonly novoLote: boolean },
  folderKey: string,
): Promise<{ lote: Lote; resumed: boolean }> {
  const response = await servidor.call('POST', '/api/lotes', {
    body: JSON.stringify({ nome: options.nome }),
    headers: { 'content-type': 'application/json', ...(options.novoLote ? {} : { 'idempotency-key': folderKey }) },
  });
  if (response.status === 429) {
    const erro = (await servidor.erro(response)) ?? 'HTTP 429';
    throw new InputError(`${erro} Veja-os com censo lotes --servidor e apague os que não servem mais com --apagar <id>.`);
  }
  const lote = await servidor.json<Lote>(response, (answer) => typeof answer.id === 'string');
  return { lote, resumed: response.headers.get('idempotent-replayed') === 'true' };
}

/**
 * A folder sent to the service is batch work, as the service's own tasks are: it runs at the
 * batch threads' niceness, so that on a machine it shares (with the service itself, or with the
 * person's other programs) whatever is interactive gets the cores first. Linux applies it to this
 * thread and the threads it starts later (undici's work is on this one); elsewhere, or where the
 * command already runs nicer, nothing changes.
 */
function yieldCores(): void {
  try {
    setPriority(Math.max(getPriority(), BATCH_NICENESS));
  } catch {
    // not permitted here: the command runs at the priority it was given
  }
}

/** Runs the folder on the server; the same summary as the local lote. */
export async function loteServidor(options: LoteServidorOptions): Promise<LoteSummary> {
  yieldCores();
  const servidor = ApiClient.from(options);
  const listing: FolderListing = await returnsToRead(options.folder, options.output);
  const ignored = [...listing.ignored];
  // An earlier result kept among the returns holds every school's rows: never sent.
  const files: ReturnFile[] = [];
  for (const file of listing.files) {
    const note = await projectOutputNote(file.path);
    if (note !== null) ignored.push({ name: file.name, note });
    else files.push(file);
  }
  if (files.length === 0) throw noReturns(options.folder, { ...listing, ignored });
  const digests = new Map<string, string>();
  for (const file of files) digests.set(file.name, await sha256(file.path));

  // The same folder (same name, paths and contents) finds its batch again. Its name is part of
  // the key because it is part of the request (the batch's nome): a renamed copy of a folder
  // under the same key would be refused as another request (422) instead of being its own batch.
  const nome = path.basename(path.resolve(options.folder));
  const folderKey = `censo-lote-${createHash('sha256')
    .update(`${nome}\n${files.map((file) => `${file.name}\0${digests.get(file.name)}\n`).join('')}`)
    .digest('hex')}`;
  const { lote, resumed } = await openBatch(servidor, { ...options, nome }, folderKey);

  // Each file's task, settled when the file is sent (at once for those an earlier run sent).
  // Only each task's id is kept (not its monitor): a state's 50,000 files must not hold 50,000 monitors.
  const sentTasks = new Map(files.map((file) => [file.name, deferred<SentId>()]));
  const already = new Set<string>();
  for await (const task of resumed ? batchTasks(servidor, lote.id) : []) {
    if (task.referencia === null || !sentTasks.has(task.referencia)) continue;
    if (!holdsFile(task, digests.get(task.referencia)!)) {
      const why = task.arquivos === undefined ? 'o servidor não diz qual arquivo ela tem' : 'ela tem outro arquivo, não o desta pasta';
      throw new InputError(
        `o lote ${lote.id} já tem uma tarefa para ${quote(task.referencia)}, mas ${why}: o lote não foi usado. ` +
          'Rode de novo com --novo-lote para enviar a pasta num lote novo.',
      );
    }
    sentTasks.get(task.referencia)!.resolve({ id: task.id });
    already.add(task.referencia);
  }
  const toSend = files.filter((file) => !already.has(file.name));
  if (toSend.length > 0 && lote.estado !== 'aberto') {
    throw new InputError(
      `o lote ${lote.id} já foi fechado sem todos os arquivos: rode de novo com --novo-lote, ou apague-o com censo lotes --apagar ${lote.id}.`,
    );
  }
  if (!options.quiet) {
    process.stderr.write(
      resumed ? `Lote ${lote.id}: retomado (${already.size} de ${files.length} arquivos já enviados).\n` : `Lote ${lote.id}: criado.\n`,
    );
  }
  // Ctrl-C leaves the batch on the server, where the same command picks it up again.
  const forgetNote = interruptNote(`o lote ${lote.id} continua no servidor: rode o mesmo comando para retomá-lo`);

  const shown = bar(
    options.quiet,
    'Lote {bar} {value}/{total} | enviados {enviados} | aguardando {aguardando} | processando {processando} | falharam {falhou}',
  );
  let enviados = already.size;
  const finished = new AbortController();
  const states = { aguardando: 0, processando: 0, falhou: 0 };
  shown.start(files.length, { enviados, ...states });
  const forgetBar = onInterrupt(() => shown.stop());

  // Sending, and reading the results in path order as their tasks end, run together: the first
  // schools' divergences are written while the last ones are still being sent.
  async function sendAll(): Promise<void> {
    const queue = groupsOf(toSend.map((file) => ({ name: file.name, path: file.path, sha256: digests.get(file.name)!, bytes: file.size })));
    // Set once a request of several files was refused and each of its files then taken alone.
    let oneByOne = false;
    const settle = (file: FileToSend, sent: Sent) => {
      sentTasks.get(file.name)!.resolve('id' in sent ? { id: sent.id } : sent);
      enviados++;
    };
    /** Each file in its own request, as long as the command goes on; whether each was taken. */
    const sendEach = async (group: readonly FileToSend[]): Promise<boolean> => {
      let taken = 0;
      for (const file of group) {
        if (finished.signal.aborted) break;
        const sent = await send(servidor, lote.id, file);
        settle(file, sent);
        if ('id' in sent) taken++;
      }
      return taken === group.length;
    };
    try {
      await Promise.all(
        Array.from({ length: Math.min(options.concurrency ?? DEFAULT_CONCURRENCY, Math.max(1, queue.length)) }, async () => {
          for (let group = queue.shift(); group !== undefined && !finished.signal.aborted; group = queue.shift()) {
            if (group.length === 1 || oneByOne) {
              await sendEach(group);
              continue;
            }
            const sent = await sendGroup(servidor, lote.id, group);
            if (Array.isArray(sent)) group.forEach((file, i) => settle(file, sent[i]!));
            // Refused whole, yet every file taken alone: a service that takes one file per request.
            else if ((await sendEach(group)) && sent === 'recusado') oneByOne = true;
          }
        }),
      );
      // A run stopped early (its writer failed) leaves the batch open, so that the next run resumes it.
      if (lote.estado === 'aberto' && !finished.signal.aborted)
        await servidor.json<Lote>(await servidor.call('POST', `/api/lotes/${lote.id}/fechar`));
    } catch (err) {
      // The command stops (a wrong key, a closed batch, the service gone): so does the writer.
      for (const pending of sentTasks.values()) pending.reject(err);
      throw err;
    }
  }

  /** The batch's counts on the bar, while there is a bar to show them. */
  async function followStates(): Promise<void> {
    while (!finished.signal.aborted) {
      const response = await servidor.call('GET', `/api/lotes/${lote.id}`);
      const wait = retryAfterMs(response);
      const { tarefas } = await servidor.json<Lote>(response, (answer) => typeof answer.tarefas === 'object' && answer.tarefas !== null);
      Object.assign(states, { aguardando: tarefas.aguardando, processando: tarefas.processando, falhou: tarefas.falhou });
      shown.update(tarefas.concluida + tarefas.falhou + tarefas.cancelada, { enviados, ...states });
      await sleep(wait, undefined, { signal: finished.signal });
    }
  }

  let read = 0;
  let rows = 0;
  const report = (name: string, erro: string) => process.stderr.write(`censo: ${quote(name)}: ${erro}\n`);
  const failures = new Failures({ ...listing, files, ignored }, report);
  // In path order, as the local lote writes them; a failed file is one line on stderr.
  async function* results(): AsyncGenerator<FileResult> {
    const ahead: Promise<Answer>[] = [];
    const look = (i: number) => {
      if (i >= files.length) return;
      const answer = sentTasks.get(files[i]!.name)!.promise.then((sent) => answerOf(servidor, sent));
      // Read in turn below; one that fails after the command has already stopped is not news.
      answer.catch(() => {});
      ahead.push(answer);
    };
    for (let i = 0; i < READ_AHEAD; i++) look(i);
    for (let i = 0; i < files.length; i++) {
      const answer = await ahead.shift()!;
      look(i + READ_AHEAD);
      const { name } = files[i]!;
      if ('erro' in answer) {
        failures.fail(name, answer.erro);
        continue;
      }
      const divergencias = options.dados ? answer.divergencias.filter((d) => ofDados(d, options.dados)) : answer.divergencias;
      read++;
      rows += divergencias.length;
      failures.read(name, divergencias.length);
      yield { name, divergencias };
    }
  }

  /**
   * CSV read back in one request (issue 35: a request and a JSON parse per file cost as much as
   * the whole local job): once every file is sent and the batch has ended, if its tasks are the
   * files sent, in path order (one request at a time keeps them so), the batch's combined CSV is
   * `censo lote`'s less one column (combined-csv.ts). Failures are told from the task list, in
   * path order. Null when it cannot be used (another order, the batch gone): read file by file.
   */
  async function combinedCsv(): Promise<AsyncIterable<Buffer> | null> {
    // Every file is in: the last tasks end soon. Looks come quickly at first (100 ms, doubling),
    // never further apart than the batch's Retry-After.
    for (let look = 0; ; look++) {
      const response = await servidor.call('GET', `/api/lotes/${lote.id}`);
      if (!response.ok) return null;
      const wait = Math.min(retryAfterMs(response), FIRST_LOOK_MS * 2 ** Math.min(look, 10));
      const { estado } = await servidor.body<Lote>(response);
      if (estado === 'concluido') break;
      if (estado === 'cancelado') return null;
      await sleep(wait);
    }
    // Each task's failure (null when it ended well), by id.
    const byId = new Map<string, string | null>();
    let rank = -1;
    const ranks = new Map(files.map((file, i) => [file.name, i]));
    for await (const task of batchTasks(servidor, lote.id)) {
      const at = task.referencia === null ? undefined : ranks.get(task.referencia);
      if (at === undefined || at <= rank) return null;
      rank = at;
      byId.set(task.id, failureOf(task));
    }
    const sent: SentId[] = [];
    for (const file of files) sent.push(await sentTasks.get(file.name)!.promise);
    if (sent.filter((s) => 'id' in s).length !== byId.size || sent.some((s) => 'id' in s && !byId.has(s.id))) return null;
    files.forEach((file, i) => {
      const s = sent[i]!;
      const erro = 'id' in s ? byId.get(s.id)! : s.erro;
      if (erro === null) {
        read++;
        return;
      }
      failures.fail(file.name, erro);
    });
    const response = await servidor.call('GET', `/api/lotes/${lote.id}/divergencias?format=csv`);
    if (!response.ok || response.body === null) throw await servidor.refusal(response);
    const counted = { records: 0 };
    return (async function* () {
      yield* withoutSecondField(response.body!, csvLine(LOTE_COLUMNS), counted);
      rows = counted.records;
    })();
  }

  const out = await openOutput(options.output);
  const scratch = scratchFolder('censo-lote-');
  const following = options.quiet || !process.stderr.isTTY ? Promise.resolve() : followStates().catch(() => {});
  try {
    // With --dado the batch's combined CSV holds every kind: read file by file, and filter.
    const combined = options.format === 'csv' && !options.dados ? await sendAll().then(combinedCsv) : null;
    if (combined !== null) await out.write(Readable.from(combined));
    else {
      const sending = options.format === 'csv' && !options.dados ? undefined : sendAll();
      await Promise.all([sending, write(options.format, results(), out, scratch.path, failures.arquivos)]);
    }
  } catch (err) {
    throw await out.abandon(err);
  } finally {
    // Also stops the sending when the writer failed (-o on a full disk): nothing more is sent.
    finished.abort();
    await following;
    shown.stop();
    forgetBar();
    forgetNote();
    await scratch.remove();
  }
  return { read, rows, failed: failures.failed, folders: failures.folders, ignored: failures.ignored };
}
