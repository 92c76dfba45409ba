// `censo lote <pasta> --servidor <url>` (SPEC §7.5): the folder sent to a censo-api as one batch,
// then the same combined output as the local `lote` (its own writer, lote.ts `write`). A rerun
// resumes: the batch is created with an Idempotency-Key derived from the folder's files (the same
// folder finds its batch again), the files the batch already holds are not sent again, and each
// file goes with an Idempotency-Key made of its SHA-256 and its path's (a file whose 202 was lost
// is not run twice).
import { createHash } from 'node:crypto';
import { createReadStream, openAsBlob } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import type * as CliProgress from 'cli-progress';
import type { Divergencia } from '@censo/shared';
import { deferred } from './deferred.js';
import { BadUsage, InputError, quote } from './failures.js';
import { listReturns } from './folder.js';
import { onInterrupt, scratchFolder } from './interrupt.js';
import { refuseInputAsOutput, write, type FileResult, type LoteFormat, type LoteSummary } from './lote.js';
import { openOutput } from './output.js';

// CommonJS, loaded with require: see shared/src/runtime/job-thread.ts (cjs-module-lexer).
const cliProgress = createRequire(import.meta.url)('cli-progress') as typeof CliProgress;

export interface LoteServidorOptions {
  readonly folder: string;
  /** The service's base URL (`--servidor`). */
  readonly servidor: string | undefined;
  /** The API key (`--chave`, else CENSO_API_KEY). */
  readonly chave: string | undefined;
  readonly format: LoteFormat;
  readonly output: string | undefined;
  /** Files sent at the same time (default 4). */
  readonly concurrency: number | undefined;
  readonly quiet: boolean;
}

interface Tarefa {
  readonly id: string;
  readonly estado: string;
  readonly referencia: string | null;
  readonly erro: { status: number; erro: string } | null;
}

type Contagens = Record<'total' | 'aguardando' | 'processando' | 'concluida' | 'falhou' | 'cancelada', number>;

interface Lote {
  readonly id: string;
  readonly estado: string;
  readonly tarefas: Contagens;
}

/** Waits between looks at the batch: its Retry-After, within these bounds. */
const POLL_MIN_MS = 250;
const POLL_MAX_MS = 5_000;
/** A file refused with 503/429 (the service is busy) is tried again this many times. */
const BUSY_RETRIES = 30;

class Servidor {
  readonly #base: string;
  readonly #key: string;

  constructor(base: string, key: string) {
    this.#base = base.replace(/\/+$/, '');
    this.#key = key;
  }

  async call(method: string, route: string, init: { body?: FormData | string; headers?: Record<string, string> } = {}): Promise<Response> {
    try {
      return await fetch(`${this.#base}${route}`, { method, ...init, headers: { 'x-api-key': this.#key, ...init.headers } });
    } catch (err) {
      const { cause } = err as { cause?: { code?: string; message?: string } };
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new InputError(`não foi possível falar com o servidor ${this.#base} (${why}).`);
    }
  }

  /** JSON of a 2xx answer; the service's own `erro` otherwise. */
  async json<T>(response: Response): Promise<T> {
    if (response.ok) return (await response.json()) as T;
    throw new InputError(`${await this.erro(response)} (HTTP ${response.status})`);
  }

  /** The `erro` of a refusal (its text when it is not the service's JSON). */
  async erro(response: Response): Promise<string> {
    const text = await response.text();
    try {
      return (JSON.parse(text) as { erro?: string }).erro ?? text;
    } catch {
      return text;
    }
  }
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function retryAfterMs(response: Response): number {
  const seconds = Number(response.headers.get('retry-after'));
  return Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : POLL_MAX_MS));
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

/** Every task of the batch, page by page. */
async function batchTasks(servidor: Servidor, lote: string): Promise<Tarefa[]> {
  const tasks: Tarefa[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page: { tarefas: Tarefa[]; next_cursor: string | null } = await servidor.json(
      await servidor.call('GET', `/api/lotes/${lote}/tarefas?limit=1000${query}`),
    );
    tasks.push(...page.tarefas);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return tasks;
}

/** Sends one file, waiting out a busy service; the task, or the service's refusal of this file. */
async function send(
  servidor: Servidor,
  lote: string,
  file: { name: string; path: string },
  digest: string,
): Promise<Tarefa | { erro: string }> {
  // The file's SHA-256, and its path's: two schools may send byte-identical returns (an empty one).
  const key = `${digest}-${createHash('sha256').update(file.name).digest('hex')}`;
  for (let attempt = 0; ; attempt++) {
    const form = new FormData();
    form.append('referencia', file.name);
    form.append('retorno', await openAsBlob(file.path), file.name);
    const response = await servidor.call('POST', `/api/lotes/${lote}/divergencias-rf`, { body: form, headers: { 'idempotency-key': key } });
    if (response.status === 202) return (await response.json()) as Tarefa;
    // Busy (the backlog, the rate limit, the same file still arriving from an earlier run): wait as told.
    const busy = response.status === 503 || response.status === 429 || (response.status === 409 && response.headers.has('retry-after'));
    if (busy && attempt < BUSY_RETRIES) {
      await response.arrayBuffer();
      await sleep(retryAfterMs(response));
      continue;
    }
    // A file the service refuses (400, 413) is reported as the local lote reports a file it cannot
    // read; anything else (a wrong key, a closed batch) stops the command.
    if (response.status === 400 || response.status === 413) return { erro: await servidor.erro(response) };
    return servidor.json<never>(response);
  }
}

/** A file's answer from the service: its divergences, or why it has none. */
type Answer = { readonly divergencias: Divergencia[] } | { readonly erro: string };

/** Waits for a sent file's task to end and reads its result: one request per look. */
async function answerOf(servidor: Servidor, sent: Tarefa | { erro: string }): Promise<Answer> {
  if (!('id' in sent)) return sent;
  for (;;) {
    const response = await servidor.call('GET', `/api/tarefas/${sent.id}/resultado?format=json`);
    if (response.ok) return { divergencias: ((await response.json()) as { divergencias: Divergencia[] }).divergencias };
    // 409 with Retry-After: still waiting or running. Without it (cancelled), and every other
    // status (the job's own 400/422, an expired task), the service's words are the file's failure.
    if (response.status === 409 && response.headers.has('retry-after')) {
      await response.arrayBuffer();
      await sleep(retryAfterMs(response));
      continue;
    }
    return { erro: await servidor.erro(response) };
  }
}

/** Results read ahead of the writer, at most this many at once (each is one file's divergences). */
const READ_AHEAD = 8;

/** Runs the folder on the server; the same summary as the local lote. */
export async function loteServidor(options: LoteServidorOptions): Promise<LoteSummary> {
  if (options.servidor === undefined) throw new BadUsage('--chave só se usa com --servidor.');
  const key = options.chave ?? process.env.CENSO_API_KEY?.trim();
  if (!key) throw new BadUsage('informe a chave da API em CENSO_API_KEY ou com --chave.');
  if (!/^https?:\/\/./i.test(options.servidor))
    throw new BadUsage(`--servidor deve ser uma URL http(s), recebido ${quote(options.servidor)}.`);
  const servidor = new Servidor(options.servidor, key);
  const { files, problems } = await listReturns(options.folder);
  if (options.output !== undefined) await refuseInputAsOutput(options.output, files);
  const digests = new Map<string, string>();
  for (const file of files) digests.set(file.name, await sha256(file.path));

  // The same folder (same paths, same contents) finds its batch again.
  const folderKey = `censo-lote-${createHash('sha256')
    .update(files.map((file) => `${file.name}\0${digests.get(file.name)}\n`).join(''))
    .digest('hex')}`;
  const lote = await servidor.json<Lote>(
    await servidor.call('POST', '/api/lotes', {
      body: JSON.stringify({ nome: path.basename(path.resolve(options.folder)) }),
      headers: { 'content-type': 'application/json', 'idempotency-key': folderKey },
    }),
  );

  // Each file's task, settled when the file is sent (at once for those an earlier run sent).
  const sentTasks = new Map(files.map((file) => [file.name, deferred<Tarefa | { erro: string }>()]));
  const already = new Set<string>();
  for (const task of await batchTasks(servidor, lote.id)) {
    if (task.referencia === null || !sentTasks.has(task.referencia)) continue;
    sentTasks.get(task.referencia)!.resolve(task);
    already.add(task.referencia);
  }
  const toSend = files.filter((file) => !already.has(file.name));
  if (toSend.length > 0 && lote.estado !== 'aberto')
    throw new InputError(`o lote ${lote.id} já foi fechado sem todos os arquivos; apague-o ou mude a pasta.`);

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
    const queue = [...toSend];
    try {
      await Promise.all(
        Array.from({ length: Math.min(options.concurrency ?? 4, Math.max(1, queue.length)) }, async () => {
          for (let file = queue.shift(); file !== undefined && !finished.signal.aborted; file = queue.shift()) {
            sentTasks.get(file.name)!.resolve(await send(servidor, lote.id, file, digests.get(file.name)!));
            enviados++;
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
      const { tarefas } = await servidor.json<Lote>(response);
      Object.assign(states, { aguardando: tarefas.aguardando, processando: tarefas.processando, falhou: tarefas.falhou });
      shown.update(tarefas.concluida + tarefas.falhou + tarefas.cancelada, { enviados, ...states });
      await sleep(wait, undefined, { signal: finished.signal });
    }
  }

  let read = 0;
  let failed = problems.length;
  let rows = 0;
  const report = (name: string, erro: string) => process.stderr.write(`censo: ${quote(name)}: ${erro}\n`);
  for (const problem of problems) report(problem.name, problem.erro);
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
        failed++;
        report(name, answer.erro);
        continue;
      }
      read++;
      rows += answer.divergencias.length;
      yield { name, divergencias: answer.divergencias };
    }
  }

  const out = await openOutput(options.output);
  const scratch = scratchFolder('censo-lote-');
  const following = options.quiet || !process.stderr.isTTY ? Promise.resolve() : followStates().catch(() => {});
  try {
    await Promise.all([sendAll(), write(options.format, results(), out, scratch.path)]);
  } catch (err) {
    throw await out.abandon(err);
  } finally {
    // Also stops the sending when the writer failed (-o on a full disk): nothing more is sent.
    finished.abort();
    await following;
    shown.stop();
    forgetBar();
    await scratch.remove();
  }
  return { read, failed, rows };
}
