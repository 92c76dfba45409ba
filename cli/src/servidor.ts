// `censo lote <pasta> --servidor <url>` (SPEC §7.5): the folder sent to a censo-api as one batch,
// then the same combined output as the local `lote` (its own writer, lote.ts `write`). A rerun
// resumes: the batch is created with an Idempotency-Key derived from the folder's files (the same
// folder finds its batch again), the files the batch already holds are not sent again, and each
// file goes with an Idempotency-Key made of its SHA-256 and its path's (a file whose 202 was lost
// is not run twice).
import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, openAsBlob } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import type { Divergencia } from '@censo/shared';
import { BadUsage, InputError, quote } from './failures.js';
import { listReturns } from './folder.js';
import { refuseInputAsOutput, write, type FileResult, type LoteFormat, type LoteSummary } from './lote.js';
import { openOutput, writeFailure } from './output.js';

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

  const tasks = new Map<string, Tarefa | { erro: string }>();
  for (const task of await batchTasks(servidor, lote.id)) if (task.referencia !== null) tasks.set(task.referencia, task);
  const toSend = files.filter((file) => !tasks.has(file.name));
  if (toSend.length > 0 && lote.estado !== 'aberto')
    throw new InputError(`o lote ${lote.id} já foi fechado sem todos os arquivos; apague-o ou mude a pasta.`);

  const sending = bar(options.quiet, 'Enviando {bar} {value}/{total} arquivos');
  sending.start(toSend.length, {});
  let sent = 0;
  const queue = [...toSend];
  await Promise.all(
    Array.from({ length: Math.min(options.concurrency ?? 4, Math.max(1, queue.length)) }, async () => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        tasks.set(file.name, await send(servidor, lote.id, file, digests.get(file.name)!));
        sending.update(++sent, {});
      }
    }),
  );
  sending.stop();

  let current = await servidor.json<Lote>(await servidor.call('POST', `/api/lotes/${lote.id}/fechar`));
  const states = bar(
    options.quiet,
    'Processando {bar} {value}/{total} | aguardando {aguardando} | processando {processando} | falharam {falhou}',
  );
  states.start(current.tarefas.total, current.tarefas);
  while (current.estado !== 'concluido') {
    const response = await servidor.call('GET', `/api/lotes/${lote.id}`);
    const wait = retryAfterMs(response);
    current = await servidor.json<Lote>(response);
    states.update(current.tarefas.concluida + current.tarefas.falhou + current.tarefas.cancelada, current.tarefas);
    if (current.estado !== 'concluido') await sleep(wait);
  }
  states.stop();

  let read = 0;
  let failed = problems.length;
  let rows = 0;
  const report = (name: string, erro: string) => process.stderr.write(`censo: ${quote(name)}: ${erro}\n`);
  for (const problem of problems) report(problem.name, problem.erro);
  // In path order, as the local lote writes them; a failed file is one line on stderr.
  async function* results(): AsyncGenerator<FileResult> {
    for (const file of files) {
      const sentTask = tasks.get(file.name)!;
      // Its state now (the one recorded at sending is from before its job ran).
      const task = 'id' in sentTask ? await servidor.json<Tarefa>(await servidor.call('GET', `/api/tarefas/${sentTask.id}`)) : null;
      const erro =
        task === null
          ? (sentTask as { erro: string }).erro
          : task.estado === 'concluida'
            ? null
            : (task.erro?.erro ?? `tarefa ${task.estado}.`);
      if (erro !== null) {
        failed++;
        report(file.name, erro);
        continue;
      }
      const { divergencias } = await servidor.json<{ divergencias: Divergencia[] }>(
        await servidor.call('GET', `/api/tarefas/${task!.id}/resultado?format=json`),
      );
      read++;
      rows += divergencias.length;
      yield { name: file.name, divergencias };
    }
  }

  const out = await openOutput(options.output);
  const work = mkdtempSync(path.join(os.tmpdir(), 'censo-lote-'));
  try {
    await write(options.format, results(), out, work);
  } catch (err) {
    await out.discard();
    if (out.failed() !== undefined) throw writeFailure(options.output, out.failed());
    throw err;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { read, failed, rows };
}
