// The BullMQ job runner against a real Redis: the same results as the embedded runner, several
// API and worker processes on one queue, deadlines, cancellation, crashes, Redis outages.
// Runner-level tests drive createBullmqRunner and in-process workers directly; process-level
// ones spawn the real entry points (`node services/*/dist/main.js`) with env, like operators do.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, constants, createWriteStream, openSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  JobTimeoutError,
  QueueUnavailableError,
  createLogger,
  loadConfig,
  runJob,
  type Config,
  type JobData,
  type JobResult,
} from '@censo/shared';
import { startServer } from '@censo/api';
import { ABORT_CANCELLED, JOB_QUEUE, closeRedisClient, createRedisClient } from '@censo/shared';
import { startWorker, type RunningWorker } from '@censo/worker';
// Not (yet) in @censo/api's barrel: the compiled adapter by path.
import { createBullmqRunner, type BullmqRunner } from '@censo/api';
import { fixtureCases, type FixtureCase } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, post } from '../helpers/http.js';
import { deleteKeys, startRedisProxy, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { onThisMachine } from '../helpers/deadline.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const silent = createLogger({ logLevel: 'silent' }, {});
const cases = fixtureCases();
const [basico] = cases;
if (!basico) throw new Error('no fixtures');

let redis: TestRedis;
let uploadDir: string;
const prefixes: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-queue-test-'));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  for (const prefix of prefixes) await deleteKeys(redis.url, prefix);
  await rm(uploadDir, { recursive: true, force: true });
  await redis.stop();
});

/**
 * A config on its own queue prefix (so job counts are this test's only), cleaned afterwards.
 * Runner-level tests share `uploadDir` and leave their job folders there (no route deletes
 * them); HTTP and process tests pass an UPLOAD_DIR of their own from `freshUploadDir()` so they
 * can check that it ends up empty.
 */
function testConfig(env: Record<string, string> = {}): Config {
  const prefix = uniqueQueuePrefix();
  prefixes.push(prefix);
  return loadConfig({
    REDIS_URL: redis.url,
    QUEUE_PREFIX: prefix,
    UPLOAD_DIR: uploadDir,
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '2',
    ...env,
  });
}

async function freshUploadDir(): Promise<string> {
  const dir = await mkdtemp(path.join(uploadDir, 'http-'));
  return dir;
}

function track<T extends { close(): Promise<unknown> }>(closable: T): T {
  cleanups.push(() => closable.close());
  return closable;
}

function inspect(config: Config): Queue<JobData, JobResult> {
  const connection = createRedisClient(config.redis!, 'worker');
  cleanups.push(() => closeRedisClient(connection));
  return track(new Queue<JobData, JobResult>(JOB_QUEUE, { connection, prefix: config.queuePrefix }));
}

/** A per-request folder as the upload routes make it, holding copies of a fixture's files. */
async function jobFolder(
  kind: JobData['kind'],
  c: FixtureCase = basico!,
  format: 'json' | 'xlsx' = 'json',
): Promise<{ id: string; data: JobData }> {
  const id = randomUUID();
  const dir = path.join(uploadDir, id);
  await mkdir(dir);
  const retorno = { path: path.join(dir, `retorno.${format}`), format } as const;
  await copyFile(c.retorno[format], retorno.path);
  const resultPath = path.join(dir, 'resultado.json');
  if (kind === 'divergencias') return { id, data: { kind, retorno, resultPath } };
  const txt = { path: path.join(dir, 'censo.txt') };
  await copyFile(c.txt, txt.path);
  return { id, data: { kind, retorno, txt, resultPath } };
}

/**
 * A job that stays active until the test says so, without any sleep in production code: its
 * return file is a named pipe (FIFO), so the worker's read blocks until `feed` writes the
 * fixture's return into it. Whoever reads the pipe after the feed gets the whole file.
 */
async function blockedJobFolder(): Promise<{
  id: string;
  data: JobData;
  expectedCount: number;
  feed(): Promise<void>;
  release(): void;
}> {
  const id = randomUUID();
  const dir = path.join(uploadDir, id);
  await mkdir(dir);
  const fifo = path.join(dir, 'retorno.json');
  execFileSync('mkfifo', [fifo]);
  const release = () => releaseFifo(fifo);
  cleanups.push(async () => release());
  const expected = basico!.expectedDivergencias as { divergencias: unknown[] };
  return {
    id,
    data: { kind: 'divergencias', retorno: { path: fifo, format: 'json' }, resultPath: path.join(dir, 'resultado.json') },
    expectedCount: expected.divergencias.length,
    release,
    async feed() {
      // Opening a FIFO for writing waits for a reader: the worker that now holds the job.
      const out = createWriteStream(fifo);
      out.end(await readFile(basico!.retorno.json));
      await once(out, 'finish');
    },
  };
}

/**
 * Ends a read left blocked on the pipe (by a thread that was aborted or is shutting down): a
 * read-write open never blocks, and closing it gives the reader end-of-file. A worker thread
 * stuck in that read could not be terminated, nor could its process exit.
 */
function releaseFifo(fifo: string): void {
  try {
    closeSync(openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK));
  } catch {
    // already gone with its folder
  }
}

function options(id: string, ms = 60_000, signal = new AbortController().signal) {
  return { id, deadline: Date.now() + ms, signal };
}

async function waitForState(queue: Queue, id: string, states: readonly string[], timeoutMs = onThisMachine(20_000)): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await queue.getJob(id);
    const state = job ? await job.getState() : 'missing';
    if (states.includes(state)) return state;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${state}, expected ${states.join('|')}`);
    await sleep(25);
  }
}

async function startInProcessWorker(config: Config): Promise<RunningWorker> {
  const worker = track(await startWorker(config, silent));
  await worker.waitUntilReady();
  return worker;
}

function startRunner(config: Config): BullmqRunner {
  return track(createBullmqRunner(config, silent));
}

// ---------------------------------------------------------------------------------------------
// Child processes running the real entry points.

interface Child {
  readonly process: ChildProcess;
  readonly lines: Record<string, unknown>[];
  waitForLine(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function spawnRole(script: 'api' | 'worker', env: Record<string, string>): Child {
  const args = script === 'api' ? ['services/api/dist/main.js', '--role=api'] : ['services/worker/dist/main.js'];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let buffered = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: line });
      }
      for (const wake of waiters) wake();
    }
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const handle: Child = {
    process: child,
    lines,
    waitForLine(match, timeoutMs = onThisMachine(20_000)) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${script} never logged the expected line; stderr: ${stderr.slice(0, 500)}`));
        }, timeoutMs);
        waiters.add(check);
        void exited.then(() => {
          if (waiters.has(check)) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`${script} exited; stderr: ${stderr.slice(0, 500)}`));
          }
        });
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  cleanups.push(() => handle.stop('SIGKILL'));
  return handle;
}

function roleEnv(config: Config, extra: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: config.queuePrefix,
    UPLOAD_DIR: config.uploadDir,
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'debug',
    WORKER_CONCURRENCY: '1',
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------------

describe('through the queue, the same results as inline', () => {
  let config: Config;
  let runner: BullmqRunner;
  beforeAll(async () => {
    config = testConfig();
    await startInProcessWorker(config);
    runner = startRunner(config);
  });

  describe.each(cases)('fixture $name', (c) => {
    it.each([
      ['divergencias', 'json'],
      ['divergencias', 'xlsx'],
      ['retorno-rf', 'json'],
      ['retorno-rf', 'xlsx'],
    ] as const)('%s from .%s', async (kind, format) => {
      const queued = await jobFolder(kind, c, format);
      const inline = await jobFolder(kind, c, format);

      const result = await runner.run(queued.data, options(queued.id));
      const expected = await runJob(inline.data, { signal: new AbortController().signal });

      expect(result).toEqual(expected);
      expect(result.ok).toBe(true);
      const body = await readFile(queued.data.resultPath, 'utf8');
      expect(body).toBe(await readFile(inline.data.resultPath, 'utf8'));
      expect(JSON.parse(body)).toEqual(kind === 'divergencias' ? c.expectedDivergencias : c.expectedPessoas);
    });
  });

  it('a bad file comes back as a result with its erro, run once, never retried', async () => {
    const { id, data } = await jobFolder('divergencias');
    await writeFile(data.retorno.path, 'isto não é JSON');

    const result = await runner.run(data, options(id));

    expect(result).toMatchObject({ ok: false, status: 400 });
    expect(result.ok === false && result.erro).toMatch(/^Arquivo retorno ilegível/);
    const job = await inspect(config).getJob(id);
    expect(await job?.getState()).toBe('completed');
    expect(job?.attemptsStarted).toBe(1);
  });

  it(
    '200 concurrent waits: one subscription, no listener warning, nothing left pending',
    async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on('warning', onWarning);
      try {
        const jobs = await Promise.all(Array.from({ length: 200 }, () => jobFolder('divergencias')));
        const results = await Promise.all(jobs.map(({ id, data }) => runner.run(data, options(id))));
        expect(results.every((r) => r.ok)).toBe(true);
        expect(runner.pendingCount()).toBe(0);
        // Listener warnings are emitted asynchronously: let them surface before checking.
        await sleep(50);
        expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
      } finally {
        process.off('warning', onWarning);
      }
    },
    onThisMachine(120_000),
  );
});

describe('deadlines and cancellation', () => {
  it('no worker: JobTimeoutError at the deadline, and the job is removed from the queue', async () => {
    const config = testConfig();
    const runner = startRunner(config);
    const queue = inspect(config);
    const { id, data } = await jobFolder('divergencias');

    await expect(runner.run(data, options(id, 500))).rejects.toBeInstanceOf(JobTimeoutError);

    await expect.poll(async () => (await queue.getJobCounts()).waiting ?? 0).toBe(0);
    expect(await queue.getJob(id)).toBeUndefined();
    expect(runner.pendingCount()).toBe(0);
  });

  it(
    'the client goes away while a worker runs the job: the worker aborts it, not retried',
    async () => {
      const config = testConfig({ WORKER_CONCURRENCY: '1' });
      await startInProcessWorker(config);
      const runner = startRunner(config);
      const queue = inspect(config);
      const { id, data, release } = await blockedJobFolder();
      const client = new AbortController();

      const running = runner.run(data, options(id, 60_000, client.signal));
      await waitForState(queue, id, ['active']);
      client.abort(new Error('client closed the connection'));

      await expect(running).rejects.toThrow('client closed the connection');
      await waitForState(queue, id, ['failed']);
      const job = await queue.getJob(id);
      expect(job?.failedReason).toBe(ABORT_CANCELLED);
      expect(job?.attemptsStarted).toBe(1);
      release();
    },
    onThisMachine(60_000),
  );

  it('a job whose upload folder is gone fails quietly, without retries', async () => {
    const config = testConfig();
    const queue = inspect(config);
    const { id, data } = await jobFolder('divergencias');
    await rm(path.dirname(data.resultPath), { recursive: true });
    await queue.add(data.kind, data, { jobId: id, attempts: 3 });

    await startInProcessWorker(config);

    await waitForState(queue, id, ['failed']);
    expect((await queue.getJob(id))?.attemptsStarted).toBe(1);
  });
});

describe('Redis unreachable', () => {
  it(
    'QueueUnavailableError at once, and the runner recovers by itself when Redis returns',
    async () => {
      const proxy = await startRedisProxy(redis.url);
      cleanups.push(() => proxy.close());
      const direct = testConfig();
      const config = loadConfig({ REDIS_URL: proxy.url, QUEUE_PREFIX: direct.queuePrefix, UPLOAD_DIR: uploadDir });
      await startInProcessWorker(direct);
      const runner = startRunner(config);
      await expect.poll(() => runner.isReady(), { timeout: onThisMachine(10_000) }).toBe(true);

      await proxy.cut();
      await expect.poll(() => runner.isReady()).toBe(false);
      const down = await jobFolder('divergencias');
      await expect(runner.run(down.data, options(down.id))).rejects.toBeInstanceOf(QueueUnavailableError);

      await proxy.restore();
      await expect.poll(() => runner.isReady(), { timeout: onThisMachine(15_000), interval: 100 }).toBe(true);
      const up = await jobFolder('divergencias');
      expect(await runner.run(up.data, options(up.id))).toMatchObject({ ok: true });
    },
    onThisMachine(40_000),
  );

  it('HTTP: 503 with the exact message when Redis cannot be reached', async () => {
    const config = testConfig({ REDIS_URL: 'redis://127.0.0.1:1', UPLOAD_DIR: await freshUploadDir() });
    const server = track(await startServer(config, 'api', silent));
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ erro: 'Fila de processamento indisponível.' });
    await expectEmptyDir(config.uploadDir);
  });
});

describe('HTTP through the queue', () => {
  it('no worker: 504 with the exact message, and UPLOAD_DIR is left empty', async () => {
    const config = testConfig({ JOB_TIMEOUT_MS: '1000', UPLOAD_DIR: await freshUploadDir() });
    const server = track(await startServer(config, 'api', silent));
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(504);
    expect(res.body).toEqual({ erro: 'Tempo esgotado ao processar o arquivo.' });
    await expectEmptyDir(config.uploadDir);
    const queue = inspect(config);
    await expect.poll(async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0)).toBe(0);
  });

  it("bad file: 400 with the worker's erro", async () => {
    const config = testConfig({ UPLOAD_DIR: await freshUploadDir() });
    const server = track(await startServer(config, 'all', silent));
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', content: 'isto não é JSON', filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(400);
    expect((res.body as { erro: string }).erro).toMatch(/^Arquivo retorno ilegível/);
    await expectEmptyDir(config.uploadDir);
  });
});

describe('several processes on one queue', () => {
  it(
    'two API processes and two workers share the queue and the upload volume',
    async () => {
      const config = testConfig({ UPLOAD_DIR: await freshUploadDir() });
      const workers = [spawnRole('worker', roleEnv(config)), spawnRole('worker', roleEnv(config))];
      const apis = [spawnRole('api', roleEnv(config)), spawnRole('api', roleEnv(config))];
      const urls = await Promise.all(apis.map(async (api) => String((await api.waitForLine((l) => l.msg === 'censo-api listening')).url)));

      const requests = Array.from({ length: 16 }, async (_, i) => {
        const c = cases[i % cases.length]!;
        const format = i % 4 < 2 ? 'json' : 'xlsx';
        const server = { url: urls[i % 2]! };
        const retorno = { field: 'retorno', path: c.retorno[format], filename: `retorno.${format}` };
        if (i % 2 === 0) {
          const res = await post(server, '/api/divergencias-rf', await formWith([retorno]));
          expect(res.status).toBe(200);
          expect(res.body).toEqual(c.expectedDivergencias);
        } else {
          const res = await post(
            server,
            '/api/retorno-rf',
            await formWith([retorno, { field: 'txt', path: c.txt, filename: 'censo.txt' }]),
          );
          expect(res.status).toBe(200);
          expect(res.body).toEqual(c.expectedPessoas);
        }
      });
      await Promise.all(requests);
      await expectEmptyDir(config.uploadDir);

      // Both workers took jobs (16 concurrent jobs, one at a time each).
      for (const worker of workers) expect(worker.lines.some((l) => l.msg === 'job done')).toBe(true);

      // SIGTERM: every process closes gracefully, exit code 0.
      expect(await Promise.all([...apis, ...workers].map((p) => p.stop('SIGTERM')))).toEqual([0, 0, 0, 0]);
    },
    onThisMachine(60_000),
  );

  it(
    'a worker killed mid-job: the job completes on another worker',
    async () => {
      const fast = { WORKER_LOCK_DURATION_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' };
      const config = testConfig({ ...fast, WORKER_CONCURRENCY: '1' });
      const queue = inspect(config);
      const doomed = spawnRole('worker', roleEnv(config, fast));
      const runner = startRunner(config);
      const { id, data, feed, expectedCount } = await blockedJobFolder();

      const running = runner.run(data, options(id, 90_000));
      await waitForState(queue, id, ['active']);
      await doomed.stop('SIGKILL');

      await startInProcessWorker(config);
      await feed();
      expect(await running).toEqual(expect.objectContaining({ ok: true, count: expectedCount }));
      expect((await queue.getJob(id))?.attemptsStarted).toBeGreaterThanOrEqual(2);
    },
    onThisMachine(90_000),
  );

  it(
    'SIGTERM on a busy worker past its drain time: the job goes back to the queue and completes elsewhere',
    async () => {
      const config = testConfig({ WORKER_CONCURRENCY: '1' });
      const queue = inspect(config);
      // JOB_TIMEOUT_MS bounds the worker's drain time, so this worker hands its job back at once.
      const leaving = spawnRole('worker', roleEnv(config, { JOB_TIMEOUT_MS: '200' }));
      const runner = startRunner(config);
      const { id, data, feed, release, expectedCount } = await blockedJobFolder();

      const running = runner.run(data, options(id, 90_000));
      await waitForState(queue, id, ['active']);
      const exited = leaving.stop('SIGTERM');
      expect(await waitForState(queue, id, ['waiting'])).toBe('waiting');
      // Its aborted thread may still sit in its read of the pipe (a real file never blocks so).
      while (!(await Promise.race([exited.then(() => true), sleep(200).then(() => false)]))) release();
      expect(await exited).toBe(0);

      await startInProcessWorker(config);
      await feed();
      expect(await running).toEqual(expect.objectContaining({ ok: true, count: expectedCount }));
      // Handed back, not failed: the shutdown did not spend an attempt.
      expect((await queue.getJob(id))?.attemptsMade).toBe(1);
    },
    onThisMachine(90_000),
  );
});
