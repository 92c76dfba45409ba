// Issue 47, "autoscaling replayed": KEDA's rule for the workers (deploy/kubernetes/base/
// worker-scaledobject.yaml, replayed by cluster/autoscale.mjs at 1/100 of its times) adds worker
// processes as the queue's lag grows and removes them (SIGTERM: the worker drains, then exits) as
// it shrinks, while `censo lote --servidor` sends a folder of 300 school returns to an API process.
// No task is lost (every one ends concluida), none runs twice to its end (one `job done` line per
// task across every worker that ever ran, and one finished attempt in its BullMQ job), and the
// combined CSV is byte for byte the local `censo lote` of the same folder.
//
// The folder reaches the API in three waves: a proxy between the CLI and the API holds the CLI's
// requests (50 files each). The first four (200 files) go at once and make the lag grow; the fifth
// when the lag has shrunk below what the workers running ask for (the scale-down window starts:
// its 50 tasks are likely still running when the window ends, so the worker removed may have one
// to drain); the sixth once the controller has removed a worker. Sent in one go, the batch's tail
// (the last 60 tasks, below which the rule asks for fewer than four workers) takes a second or two
// here, less than the stabilization window, and the workers would only be removed after the
// batch; held, the scale-down comes while the batch is still open.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { link, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TASK_ENDED_EVENT, TASK_QUEUE } from '@censo/shared';
import { autoscale, type Autoscaler } from '../helpers/autoscale.js';
import { API_KEY } from '../helpers/http.js';
import { type ServiceProcess } from '../helpers/processes.js';
import { processEnv, startApiProcess, startWorkerProcess } from '../helpers/queue-processes.js';
import { deleteKeys, keysMatching, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { onThisMachine } from '../helpers/deadline.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'cli', 'bin', 'censo.js');
const FILES = 300;
/** The CLI sends 50 files a request (cli/src/servidor.ts): the first wave is 200 files, then 50 and 50. */
const FIRST_WAVE_REQUESTS = 4;
const MAX_WORKERS = 4;
/** 1/100 of every time of the recipe: a 150 ms poll, a 3 s window, one pod per 600 ms. */
const TIME_SCALE = 1 / 100;
/** A wave held goes at the latest this long after the first request held, released or not (the test then fails). */
const GATE_MAX_MS = onThisMachine(25_000);
/** The whole `censo lote --servidor` run. */
const CLI_MAX_MS = onThisMachine(60_000);

interface Host {
  readonly process: ServiceProcess;
  /** When it was sent SIGTERM by the controller (null: never). */
  terminatedAt: number | null;
  exitCode?: number | null;
}

interface Run {
  readonly code: number | null;
  readonly stderr: string;
}

let redis: TestRedis;
let client: Redis;
let work: string;
let folder: string;
let uploadDir: string;
let localCsv: Buffer;
let api: ServiceProcess | undefined;
let apiUrl: string;
let scaler: Autoscaler | undefined;
let gate: http.Server | undefined;
const queuePrefix = uniqueQueuePrefix();
const hosts: Host[] = [];
const children = new Set<ReturnType<typeof spawn>>();

function censo(args: readonly string[], env: Record<string, string> = {}, maxMs = CLI_MAX_MS): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.add(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), maxMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stderr });
    });
  });
}

// One job thread per "host" (processEnv): another host is another thread.
const env = () => processEnv({ redisUrl: redis.url, queuePrefix, uploadDir }, { API_KEY });

async function addWorker(): Promise<void> {
  hosts.push({ process: await startWorkerProcess(env(), { startMs: 30_000 }), terminatedAt: null });
}

/** SIGTERM to the newest worker still running (a ReplicaSet removes its newest pod first); resolves once it has exited. */
async function removeWorker(onTerminated: () => void): Promise<void> {
  const host = hosts.findLast((h) => h.terminatedAt === null);
  if (!host) throw new Error('no worker to remove');
  host.terminatedAt = Date.now();
  onTerminated();
  host.exitCode = await host.process.stop();
}

/** SIGTERM, then SIGKILL if it is still there after `graceMs`. */
async function stopWithin(process: ServiceProcess, graceMs = onThisMachine(25_000)): Promise<void> {
  const timer = setTimeout(() => process.child.kill('SIGKILL'), graceMs);
  try {
    await process.stop();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A proxy to the API that holds the CLI's uploads in waves: upload n (from 1) waits for every
 * wave whose `after` is below n to be released (or GATE_MAX_MS after the first upload held);
 * every other request passes at once.
 */
async function startGate(
  target: string,
  waves: ReadonlyArray<{ after: number; released: Promise<void> }>,
): Promise<{ url: string; held: () => number; answers: () => Record<number, number> }> {
  let uploads = 0;
  let held = 0;
  /** The API's answers by status, for whoever reads a failed run. */
  const answers = new Map<number, number>();
  let deadline: Promise<void> | undefined;
  const server = http.createServer((req, res) => {
    const upload = req.method === 'POST' && /^\/api\/lotes\/[^/]+\/divergencias-rf(\?|$)/.test(req.url ?? '');
    const n = upload ? ++uploads : 0;
    const waitFor = waves.filter((wave) => n > wave.after);
    let wait: Promise<unknown> = Promise.resolve();
    if (waitFor.length > 0) {
      held++;
      deadline ??= sleep(GATE_MAX_MS);
      wait = Promise.race([Promise.all(waitFor.map((wave) => wave.released)), deadline]);
    }
    void wait.then(() => {
      // As a reverse proxy does: the API may answer before it has read the body (a busy backlog's
      // 503, an upload still in progress' 409) and then half-close, lingering on what is still
      // sent (app.ts). The rest of the body written after that fails with EPIPE on this side;
      // that must not take away the answer already on its way to the CLI. Only an error before
      // any answer is the CLI's error too. Once run beside two busy loops, the CLI got EPIPE here.
      let answered = false;
      const upstream = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
        answered = true;
        answers.set(answer.statusCode ?? 0, (answers.get(answer.statusCode ?? 0) ?? 0) + 1);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.on('close', () => {
          if (!answer.complete) res.destroy();
        });
        answer.pipe(res);
      });
      upstream.on('error', (err) => {
        req.unpipe(upstream);
        req.resume();
        if (!answered) res.destroy(err);
      });
      req.pipe(upstream);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  gate = server;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held,
    answers: () => Object.fromEntries(answers),
  };
}

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

async function apiJson(route: string): Promise<Record<string, unknown>> {
  const response = await fetch(new URL(route, apiUrl), { headers: { 'x-api-key': API_KEY } });
  expect(response.status, route).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-autoscale-'));
  uploadDir = path.join(work, 'uploads');
  folder = path.join(work, 'retornos');
  // One school's return (500 persons, 1,500 rows), hard-linked 300 times in 10 regional folders.
  const bench = (await import(pathToFileURL(path.join(ROOT, 'bench', 'cli.mjs')).href)) as {
    schoolReturn(root: string): Promise<{ file: string }>;
  };
  const { file } = await bench.schoolReturn(path.join(work, 'data'));
  for (let i = 0; i < FILES; i++) {
    const regional = path.join(folder, `regional-${i % 10}`);
    await mkdir(regional, { recursive: true });
    await link(file, path.join(regional, `escola-${i}.xlsx`));
  }
  const local = await censo(['--quiet', 'lote', folder, '-o', path.join(work, 'local.csv')]);
  expect(local, local.stderr).toMatchObject({ code: 0 });
  localCsv = await readFile(path.join(work, 'local.csv'));

  ({ process: api, url: apiUrl } = await startApiProcess(env(), { startMs: 30_000 }));
  await addWorker();
});

afterAll(async () => {
  await scaler?.stop();
  gate?.closeAllConnections();
  gate?.close();
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(hosts.map((host) => stopWithin(host.process)));
  if (api) await stopWithin(api);
  client?.disconnect();
  if (redis) await deleteKeys(redis.url, queuePrefix);
  if (work) await rm(work, { recursive: true, force: true });
  await redis?.stop();
});

it(
  'workers added as the lag grows and removed (drained) as it shrinks, during a batch: no task lost or run twice, the same CSV',
  async () => {
    const recipe = await autoscale.loadRecipe({ timeScale: TIME_SCALE, minReplicaCount: 1, maxReplicaCount: MAX_WORKERS });
    const shrinking = signal(); // the lag has shrunk below what the workers running ask for
    const oneRemoved = signal(); // the controller has removed a worker
    const proxy = await startGate(apiUrl, [
      { after: FIRST_WAVE_REQUESTS, released: shrinking.promise },
      { after: FIRST_WAVE_REQUESTS + 1, released: oneRemoved.promise },
    ]);
    let scaledUp = false;
    scaler = autoscale.startAutoscaler({
      recipe,
      readMetrics: autoscale.metricsFrom({
        redis: client,
        queuePrefix,
        apiUrls: [apiUrl],
        apiKey: API_KEY,
        timeoutMs: onThisMachine(2_000),
      }),
      addWorker,
      removeWorker: () => removeWorker(oneRemoved.fire),
      onDecision: (entry) => {
        scaledUp ||= entry.desired > entry.actual;
        if (scaledUp && entry.proposal !== null && entry.proposal < entry.actual) shrinking.fire();
      },
      replicas: 1,
      // Bounded whatever happens: CLI_MAX_MS of polls.
      maxTicks: Math.ceil(CLI_MAX_MS / recipe.pollingMs),
    });

    const started = Date.now();
    const servidorCsv = path.join(work, 'servidor.csv');
    const run = await censo(['--quiet', 'lote', folder, '--servidor', proxy.url, '-o', servidorCsv], { CENSO_API_KEY: API_KEY });
    const cliMs = Date.now() - started;
    await scaler.stop();
    const history = scaler.history;
    const events = autoscale.scalingEvents(history);
    const seen = () => JSON.stringify({ events, errors: scaler?.errors, held: proxy.held(), answers: proxy.answers(), cliMs });
    expect(run, `${run.stderr}\n${seen()}`).toMatchObject({ code: 0 });
    expect(scaler.errors, seen()).toEqual([]);

    // Every task of the batch ended concluida.
    const lotes = (await apiJson('/api/lotes')).lotes as Array<{ id: string }>;
    expect(lotes).toHaveLength(1);
    const lote = await apiJson(`/api/lotes/${lotes[0]!.id}`);
    expect(lote).toMatchObject({ estado: 'concluido', tarefas: { total: FILES, concluida: FILES, falhou: 0, cancelada: 0 } });
    const tarefas = (await apiJson(`/api/lotes/${lotes[0]!.id}/tarefas?limit=1000`)).tarefas as Array<{ id: string; estado: string }>;
    expect(tarefas).toHaveLength(FILES);
    expect(tarefas.filter((t) => t.estado !== 'concluida')).toEqual([]);

    // None ran twice to its end. The worker logs `job done` once a task's work has returned, before
    // BullMQ or the group's hash is told: a task run to its end by two workers (one lost its lock, or
    // a group handed back after a task had ended but before its end was recorded) logs it twice,
    // even where Redis keeps one end. The line names the task (`tarefa`) when a group job carries
    // it (TAREFAS_POR_JOB, 50 by default: one job for each request of 50 files), else the task is the
    // job (`jobId`). Every worker that ever ran is counted, the removed ones too.
    const done = hosts.flatMap((host) => host.process.lines.filter((line) => line.msg === 'job done'));
    const perTask = new Map<string, number>();
    for (const line of done) {
      const id = String(line.tarefa ?? line.jobId);
      perTask.set(id, (perTask.get(id) ?? 0) + 1);
    }
    expect([...perTask].filter(([, n]) => n !== 1)).toEqual([]);
    expect(new Set(perTask.keys())).toEqual(new Set(tarefas.map((t) => t.id)));
    // Redis agrees. The API removes a job once it has recorded its tasks' ends, so the jobs are not
    // kept to be read; the queue's events stream is. Nothing is left in the queue; each job (a group
    // or a task of its own) completed once and never failed; and each grouped task's end was told
    // to the APIs once (the worker tells a task's end once, after running it, and a group job taken
    // again skips the tasks whose ends are recorded: told twice would be run twice).
    const queueKey = `${queuePrefix}:${TASK_QUEUE}`;
    const left = await Promise.all([
      client.llen(`${queueKey}:wait`),
      client.llen(`${queueKey}:active`),
      client.zcard(`${queueKey}:prioritized`),
      client.zcard(`${queueKey}:delayed`),
      client.zcard(`${queueKey}:failed`),
    ]);
    expect(left).toEqual([0, 0, 0, 0, 0]);
    const entries = (read: [string, string[]][]) =>
      read.map(([, flat]) => {
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
        return fields;
      });
    // BullMQ's own events on the queue's stream; the grouped tasks' ends on the streams of the APIs
    // that queued them (issue 55: each API reads only the ends of its own tasks).
    const queueEvents = entries(await client.xrange(`${queueKey}:events`, '-', '+'));
    const endsStreams = await keysMatching(client, `${queuePrefix}:fim:*`);
    const told = entries((await Promise.all(endsStreams.map((key) => client.xrange(key, '-', '+')))).flat());
    const count = (event: string, key: (fields: Record<string, string>) => string[], stream = queueEvents) => {
      const out = new Map<string, number>();
      for (const fields of stream.filter((f) => f.event === event)) for (const id of key(fields)) out.set(id, (out.get(id) ?? 0) + 1);
      return out;
    };
    const completions = count('completed', (f) => [f.jobId!]);
    const starts = count('active', (f) => [f.jobId!]);
    expect(completions.size).toBeGreaterThan(0);
    expect([...completions].filter(([, n]) => n !== 1)).toEqual([]);
    expect(count('failed', (f) => [f.jobId!])).toEqual(new Map());
    const grouped = done.filter((line) => line.tarefa !== undefined).map((line) => String(line.tarefa));
    const tasksTold = count(TASK_ENDED_EVENT, (f) => f.tarefas!.split(','), told);
    expect([...tasksTold].filter(([, n]) => n !== 1)).toEqual([]);
    expect(new Set(tasksTold.keys())).toEqual(new Set(grouped));
    expect(count(TASK_ENDED_EVENT, (f) => f.tarefas!.split(','))).toEqual(new Map());

    // The controller scaled up and down while the batch ran: after the CLI started and before its last task ended.
    const timeOf = (line: Record<string, unknown>) => Date.parse(String(line.time)); // pino's isoTime
    const lastDone = Math.max(...done.map(timeOf));
    const ups = events.filter((e) => e.to > e.from && e.at > started && e.at < lastDone);
    const downs = events.filter((e) => e.to < e.from && e.at > started && e.at < lastDone);
    expect(ups.length, seen()).toBeGreaterThanOrEqual(1);
    expect(downs.length, seen()).toBeGreaterThanOrEqual(1);
    expect(Math.max(...history.map((e) => e.desired))).toBe(MAX_WORKERS);
    // Up because the lag grew past what the workers running could take: the tasks waiting, read as KEDA reads them.
    expect(history.find((e) => e.at === ups[0]!.at)!.metrics.assincronas, seen()).toBeGreaterThan(20 * ups[0]!.from);

    // Each worker removed drained and exited on its own (no SIGKILL), having logged its close.
    const removed = hosts.filter((host) => host.terminatedAt !== null);
    expect(removed.length).toBe(events.filter((e) => e.to < e.from).reduce((sum, e) => sum + e.from - e.to, 0));
    for (const host of removed) {
      expect(host.exitCode).toBe(0);
      expect(host.process.lines.some((line) => line.msg === 'worker closed')).toBe(true);
      expect(host.process.lines.filter((line) => line.msg === 'drain time over: handing active jobs back to the queue')).toEqual([]);
    }

    // The batch's answer is the local one, byte for byte.
    const answer = await readFile(servidorCsv);
    expect(answer.length).toBe(localCsv.length);
    expect(answer.equals(localCsv)).toBe(true);

    // What happened, for whoever reads the run.
    const drainedJobs = removed.map(
      (host) => host.process.lines.filter((line) => line.msg === 'job done' && timeOf(line) > host.terminatedAt!).length,
    );
    console.log(
      JSON.stringify({
        cliMs,
        workersStarted: hosts.length,
        events: events.map((e) => `${(e.elapsedMs / 1000).toFixed(2)}s ${e.from}→${e.to}`),
        lastTaskEndedAtS: ((lastDone - started) / 1000).toFixed(2),
        jobs: completions.size,
        tasksEndedByRemovedWorkersAfterTheirSigterm: drainedJobs,
        jobsStartedMoreThanOnce: [...starts.values()].filter((n) => n > 1).length,
        stalled: queueEvents.filter((f) => f.event === 'stalled').length,
        peakLag: Math.max(...history.map((e) => e.metrics.assincronas ?? 0)),
        polls: history.length,
        answers: proxy.answers(),
      }),
    );
  },
  onThisMachine(120_000),
);
