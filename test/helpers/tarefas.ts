// Asynchronous intake (SPEC §7) under test: the real app on an ephemeral port, in embedded or
// queue mode, on the folder or an S3 bucket, with the real job pool behind a gate the test can
// close. A closed gate keeps jobs "running" (taken by the executor or a worker, not yet on a
// thread) until the test lets them go, so waiting, running and cancelled tasks are reached
// without depending on how fast this machine is.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  areaFolderName,
  createJobPool,
  createLogger,
  createStorage,
  loadConfig,
  type Config,
  type JobData,
  type JobPool,
  type JobResult,
  type Storage,
} from '@censo/shared';
import {
  buildApp,
  createInProcessRunner,
  createQueueRunner,
  embeddedTaskBackend,
  queueTaskBackend,
  type BullmqRunner,
  type JobRunner,
  type TaskBackend,
} from '@censo/api';
import { startWorker, type RunningWorker } from '@censo/worker';
import type { FastifyInstance } from 'fastify';
import { API_KEY, formWith, type UploadFile } from './http.js';
import { deleteKeys, uniqueQueuePrefix } from './redis.js';
import type { Safra } from '../../services/api/dist/safra/index.js';
import { onThisMachine } from './deadline.js';

export type Mode = 'embedded' | 'queue';
export const MODES: readonly Mode[] = ['embedded', 'queue'];

/** The jobs the gate has seen, in the order they reached it, by their result's storage area. */
export interface GatedJob {
  readonly area: string;
  readonly kind: JobData['kind'];
  readonly signal: AbortSignal | undefined;
}

export class Gate {
  readonly seen: GatedJob[] = [];
  #open = true;
  #waiting: Array<{ resolve: () => void; job: GatedJob }> = [];

  close(): void {
    this.#open = false;
  }

  /** Opens for good: every held job goes on. */
  open(): void {
    this.#open = true;
    for (const waiter of this.#waiting.splice(0)) waiter.resolve();
  }

  /** Lets the oldest held job go on (the gate stays closed for the others). */
  releaseOne(): void {
    this.#waiting.shift()?.resolve();
  }

  get held(): number {
    return this.#waiting.length;
  }

  async pass(data: JobData, signal: AbortSignal | undefined): Promise<void> {
    const job = { area: areaOf(data.resultPath), kind: data.kind, signal };
    this.seen.push(job);
    if (this.#open) return;
    await new Promise<void>((resolve, reject) => {
      const waiter = { resolve, job };
      this.#waiting.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          this.#waiting = this.#waiting.filter((w) => w !== waiter);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
}

/** The request area (= task id) of a file reference, in the folder (`censo-<id>`) or the bucket (`<id>`). */
export function areaOf(ref: string): string {
  return path.posix.basename(path.posix.dirname(ref.replaceAll('\\', '/'))).replace(/^censo-/, '');
}

export function gated(pool: JobPool, gate: Gate): JobPool {
  return {
    async run(data: JobData, signal?: AbortSignal): Promise<JobResult> {
      await gate.pass(data, signal);
      return pool.run(data, signal);
    },
    close: () => pool.close(),
  };
}

export interface Harness {
  readonly mode: Mode;
  /** The app itself, for what HTTP cannot show (the webhook messages still to send). */
  readonly app: FastifyInstance;
  readonly url: string;
  readonly config: Config;
  readonly storage: Storage;
  readonly gate: Gate;
  readonly uploadDir: string;
  /** Stops the API (and its worker), keeping Redis keys and files: for a restart. */
  stop(): Promise<void>;
  dispose(): Promise<void>;
}

export interface HarnessOptions {
  readonly env?: Record<string, string>;
  readonly redisUrl: string;
  readonly now?: () => number;
  /** Housekeeping faster than production, so expiry and webhooks show within a test. */
  readonly intervals?: { reconcileMs?: number; sweepMs?: number; webhooksMs?: number };
  /** Another API on the same queue prefix and storage (queue mode): no worker of its own. */
  readonly sameAs?: Harness;
  /** Queue mode without a worker: the test starts its own (other versions, stops mid-job). */
  readonly noWorker?: boolean;
  /** The queue's prefix, another harness's after it stopped (default: one of its own). */
  readonly queuePrefix?: string;
  /** A folder of the test's own (removed with the harness). */
  readonly uploadDir?: string;
  /** Keeps every log line (LOG_LEVEL from env, else info). */
  readonly logLines?: Array<Record<string, unknown>>;
  /** A port chosen beforehand (sign-in needs PUBLIC_URL before the start); default: any free one. */
  readonly port?: number;
  /** The season ledger (SPEC §13); the test owns it (closes it). */
  readonly safra?: Safra;
}

export async function startHarness(mode: Mode, options: HarnessOptions): Promise<Harness> {
  const uploadDir = options.sameAs?.uploadDir ?? options.uploadDir ?? (await mkdtemp(path.join(os.tmpdir(), 'censo-tarefas-')));
  const queuePrefix = options.sameAs?.config.queuePrefix ?? options.queuePrefix ?? uniqueQueuePrefix();
  const config = loadConfig({
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    UPLOAD_DIR: uploadDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? (options.logLines ? 'info' : 'silent'),
    WORKER_CONCURRENCY: '2',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // Its own lines would fill the test output; the suites that read it set a file of their own.
    ACCESS_LOG: '/dev/null',
    ...(mode === 'queue' ? { REDIS_URL: options.redisUrl, QUEUE_PREFIX: queuePrefix } : {}),
    // The suites run as production's default (a job per task); TEST_TAREFAS_POR_JOB runs them with group jobs.
    ...(process.env.TEST_TAREFAS_POR_JOB ? { TAREFAS_POR_JOB: process.env.TEST_TAREFAS_POR_JOB } : {}),
    // TEST_QUEUE_SHARDS runs them over several queues (shards.ts).
    ...(process.env.TEST_QUEUE_SHARDS ? { QUEUE_SHARDS: process.env.TEST_QUEUE_SHARDS } : {}),
    ...options.env,
  });
  const lines = options.logLines;
  const logger = lines
    ? createLogger(config, {}, { write: (chunk: string) => void lines.push(JSON.parse(chunk) as Record<string, unknown>) })
    : createLogger(config, {});
  const storage = await createStorage(config, logger);
  const gate = options.sameAs?.gate ?? new Gate();
  const pool = createJobPool({ threads: 2, maxQueue: 128 });
  let runner: JobRunner;
  let tasks: TaskBackend;
  let worker: RunningWorker | null = null;
  if (mode === 'embedded') {
    runner = createInProcessRunner(gated(pool, gate), storage);
    tasks = embeddedTaskBackend(runner, config, options.now ? { now: options.now } : {});
  } else {
    const queue: BullmqRunner = createQueueRunner(config, logger);
    runner = queue;
    tasks = queueTaskBackend(queue, config);
    if (!options.sameAs && !options.noWorker) {
      worker = await startWorker(config, logger, { executor: gated(pool, gate), storage, drainMs: 1_000 });
      await worker.waitUntilReady();
    }
  }
  const app = await buildApp({
    config,
    logger,
    runner,
    tasks,
    storage,
    query: null,
    safra: options.safra ?? null,
    tarefas: {
      ...(options.now ? { now: options.now } : {}),
      intervals: { reconcileMs: 200, sweepMs: 200, webhooksMs: 100, ...options.intervals },
    },
  });
  const url = await app.listen({ host: '127.0.0.1', port: options.port ?? 0 });
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      gate.open();
      await app.close();
      await worker?.close();
      if (!worker) await pool.close();
      storage.close();
    })());
  return {
    mode,
    app,
    url,
    config,
    storage,
    gate,
    uploadDir,
    stop,
    async dispose() {
      await stop();
      if (options.sameAs) return;
      if (mode === 'queue') await deleteKeys(options.redisUrl, queuePrefix);
      await rm(uploadDir, { recursive: true, force: true });
    },
  };
}

// ------------------------------------------------------------------------------------ requests

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Buffer;
  json(): Record<string, unknown>;
}

export async function request(
  server: { url: string },
  method: string,
  route: string,
  options: { body?: FormData | string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: { 'x-api-key': API_KEY, ...options.headers },
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    headers: response.headers,
    bytes,
    json: () => JSON.parse(bytes.toString('utf8')) as Record<string, unknown>,
  };
}

/** POST with `Prefer: respond-async`. */
export async function postAsync(
  server: { url: string },
  route: string,
  files: readonly UploadFile[],
  options: { headers?: Record<string, string>; fields?: Record<string, string> } = {},
): Promise<Answer> {
  return request(server, 'POST', route, {
    body: await formWith(files, options.fields),
    headers: { prefer: 'respond-async', ...options.headers },
  });
}

export type Monitor = Record<string, unknown> & { id: string; estado: string };

export async function monitor(server: { url: string }, id: string): Promise<Monitor> {
  const answer = await request(server, 'GET', `/api/tarefas/${id}`);
  if (answer.status !== 200) throw new Error(`GET /api/tarefas/${id}: ${answer.status} ${answer.bytes.toString()}`);
  return answer.json() as Monitor;
}

/** Polls the monitor (as a client honouring nothing but its patience would) until `done(monitor)`. */
export async function waitForTarefa(
  server: { url: string },
  id: string,
  done: (m: Monitor) => boolean = (m) => ['concluida', 'falhou', 'cancelada'].includes(m.estado),
  timeoutMs = onThisMachine(20_000),
): Promise<Monitor> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const current = await monitor(server, id);
    if (done(current)) return current;
    if (Date.now() > deadline) {
      const metrics = (await request(server, 'GET', '/metrics')).bytes
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('censo_queue') || l.startsWith('censo_inflight'));
      throw new Error(`task ${id} still ${current.estado} ${JSON.stringify(metrics)}`);
    }
    await sleep(25);
  }
}

/** The files left in a task's folder (folder storage); null when the folder is gone. */
export async function areaFiles(harness: Harness, id: string): Promise<string[] | null> {
  try {
    return (await readdir(path.join(harness.uploadDir, areaFolderName(id)))).sort();
  } catch {
    return null;
  }
}

export const uniqueName = () => randomUUID().slice(0, 8);

/** Every sheet of a workbook with its rows as text: what a spreadsheet program shows. */
export async function workbookSheets(bytes: Buffer): Promise<Array<{ name: string; rows: string[][] }>> {
  const { default: ExcelJS } = await import('exceljs');
  const book = new ExcelJS.Workbook();
  await book.xlsx.load(bytes as unknown as ArrayBuffer);
  return book.worksheets.map((sheet) => {
    const rows: string[][] = [];
    sheet.eachRow({ includeEmpty: true }, (row) => {
      const values = row.values as unknown[];
      rows.push(values.slice(1).map((value) => (value === null || value === undefined ? '' : String(value))));
    });
    return { name: sheet.name, rows };
  });
}

/** The fields of a task's monitor (SPEC §7.1), sorted. */
export const MONITOR_KEYS = [
  'arquivos',
  'concluida_em',
  'criada_em',
  'erro',
  'estado',
  'expira_em',
  'formato',
  'id',
  'iniciada_em',
  'lote',
  'referencia',
  'resultado',
  'rota',
];

/** A new batch on `server` (POST /api/lotes with an empty body): its id. */
export async function createLote(server: { url: string }): Promise<string> {
  return (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json().id as string;
}

/** `count` copies of the return `json` (its bytes) in one request to batch `lote`, each with its own referencia (an 8-digit INEP code, 11000000 + i). */
export async function sendReturns(server: { url: string }, lote: string, json: Uint8Array, count: number): Promise<Answer> {
  const form = new FormData();
  for (let i = 0; i < count; i++) {
    form.append('referencia', String(11_000_000 + i));
    form.append('retorno', new Blob([json]), `escola-${i}.json`);
  }
  return request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: form });
}

/** The task ids of a batch request's answer, in the order of its files. */
export const tarefaIds = (answer: Answer): string[] => (answer.json().tarefas as Array<{ id: string }>).map((t) => t.id);
