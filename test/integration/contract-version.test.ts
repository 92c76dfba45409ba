// SPEC §9 "processes of version N and N+1 share one queue during an upgrade; a job whose contract
// version a worker does not know is left for another worker, never failed" (issue 34). Two
// workers of different contract versions on one queue of their own, the real job pool behind
// each, and jobs queued as an API of either version queues them.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CORE_JOB_CONTRACT_VERSION,
  JOB_CONTRACT_VERSION,
  JOB_OPTIONS,
  JOB_QUEUE,
  closeRedisClient,
  createLogger,
  createRedisClient,
  loadConfig,
  withContract,
  type Config,
  type JobData,
  type JobResult,
  type QueuedJobData,
} from '@censo/shared';
import { createBullmqRunner } from '@censo/api';
import { startWorker, type RunningWorker } from '@censo/worker';
import { fixtureCases } from '../helpers/fixtures.js';
import { logLines } from '../helpers/log-lines.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const N = JOB_CONTRACT_VERSION;

let redis: TestRedis;
let uploadDir: string;
let config: Config;
let queue: Queue<QueuedJobData, JobResult>;
let connection: ReturnType<typeof createRedisClient>;
const workers: RunningWorker[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-contract-'));
  config = loadConfig({
    REDIS_URL: redis.url,
    QUEUE_PREFIX: uniqueQueuePrefix(),
    UPLOAD_DIR: uploadDir,
    API_KEY: 'k',
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '1',
  });
  connection = createRedisClient(config.redis!, 'worker');
  queue = new Queue<QueuedJobData, JobResult>(JOB_QUEUE, { connection, prefix: config.queuePrefix });
});
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.close();
});
afterAll(async () => {
  await queue?.close();
  if (connection) await closeRedisClient(connection);
  await deleteKeys(redis.url, config.queuePrefix);
  await rm(uploadDir, { recursive: true, force: true });
  await redis?.stop();
});

/** A worker that knows contracts up to `version`, and the lines it logs. */
async function startVersioned(version: number): Promise<{ worker: RunningWorker; lines: Array<Record<string, unknown>> }> {
  const { lines, sink } = logLines();
  const log = pino({ level: 'info' }, sink);
  const worker = await startWorker(config, log, { contractVersion: version, drainMs: 2_000 });
  workers.push(worker);
  await worker.waitUntilReady();
  return { worker, lines };
}

/** A request's folder as the upload route makes it, with the fixture's return. */
async function jobData(): Promise<{ id: string; data: JobData }> {
  const id = randomUUID();
  const dir = path.join(uploadDir, id);
  await mkdir(dir);
  const retorno = { path: path.join(dir, 'retorno.json'), format: 'json' } as const;
  await copyFile(basico.retorno.json, retorno.path);
  return { id, data: { kind: 'divergencias', retorno, resultPath: path.join(dir, 'resultado.json') } };
}

async function enqueue(data: QueuedJobData, id: string): Promise<void> {
  await queue.add(data.kind, data, { ...JOB_OPTIONS, jobId: id });
}

async function stateOf(id: string): Promise<string> {
  return queue.getJobState(id);
}

const expectedCount = (basico.expectedDivergencias as { divergencias: unknown[] }).divergencias.length;

describe('contract versions on one queue (rolling upgrade)', () => {
  it('an N worker gives an N+1 job back without failing it or spending an attempt; an N+1 worker then runs it', async () => {
    const older = await startVersioned(N);
    const { id, data } = await jobData();
    await enqueue(withContract(data, N + 1), id);

    // Taken and given back at least three times (the N worker comes back every second): still not
    // failed, no attempt spent.
    await waitFor(async () => ((await queue.getJob(id))?.attemptsStarted ?? 0) >= 3, {
      timeoutMs: onThisMachine(15_000),
      what: 'three hand-backs',
    });
    const waiting = await queue.getJob(id);
    expect(['delayed', 'waiting', 'prioritized', 'active']).toContain(await stateOf(id));
    expect(waiting?.attemptsMade).toBe(0);
    expect(waiting?.failedReason).toBeUndefined();
    // Reported once, not once per hand-back.
    expect(older.lines.filter((line) => line.msg === 'job of a newer contract left for a newer worker')).toEqual([
      expect.objectContaining({ level: 40, jobId: id, contract: N + 1, known: N }),
    ]);

    const newer = await startVersioned(N + 1);
    await waitFor(async () => (await stateOf(id)) === 'completed', {
      timeoutMs: onThisMachine(15_000),
      what: 'the N+1 worker to finish the job',
    });
    const done = await queue.getJob(id);
    expect(done?.returnvalue).toMatchObject({ ok: true, count: expectedCount });
    expect(done?.attemptsMade).toBe(1);
    expect(newer.lines.filter((line) => line.msg === 'job done')).toEqual([expect.objectContaining({ jobId: id, contract: N + 1 })]);
    expect(older.lines.filter((line) => line.msg === 'job done' || line.msg === 'job failed')).toEqual([]);
  });

  it('an N+1 worker runs N jobs and jobs queued before versions were carried', async () => {
    const newer = await startVersioned(N + 1);
    const current = await jobData();
    const unversioned = await jobData();
    await enqueue(withContract(current.data, N), current.id);
    await enqueue(unversioned.data, unversioned.id);
    for (const { id } of [current, unversioned]) {
      await waitFor(async () => (await stateOf(id)) === 'completed', { timeoutMs: onThisMachine(15_000), what: `job ${id}` });
      expect((await queue.getJob(id))?.returnvalue).toMatchObject({ ok: true, count: expectedCount });
    }
    expect(newer.lines.filter((line) => line.msg === 'job done').map((line) => line.contract)).toEqual([N, 1]);
  });

  it('a contract that is not a version fails the job at once (job data is read from Redis)', async () => {
    await startVersioned(N);
    const { id, data } = await jobData();
    await enqueue({ ...data, contract: 'dois' } as unknown as QueuedJobData, id);
    await waitFor(async () => (await stateOf(id)) === 'failed', { timeoutMs: onThisMachine(15_000), what: 'the job to fail' });
    const failed = await queue.getJob(id);
    expect(failed?.failedReason).toBe('invalid job data: its contract version is not a whole number from 1');
    expect(failed?.attemptsMade).toBe(1);
  });

  it("the API's jobs carry the oldest contract version that runs them: CORE_JOB_CONTRACT_VERSION for a job of the core (3 since issue 46 changed its answer, 4 since issue 56), so an older worker gives it back", async () => {
    await startVersioned(N);
    const runner = createBullmqRunner(config, createLogger({ logLevel: 'silent' }, {}));
    try {
      const { id, data } = await jobData();
      const result = await runner.run(data, { id, deadline: Date.now() + 20_000, signal: new AbortController().signal });
      expect(result).toMatchObject({ ok: true, count: expectedCount });
      // And the address of the API whose stream its end is told to (issue 55): a field older workers ignore.
      expect((await queue.getJob(id))?.data).toEqual({ ...data, contract: CORE_JOB_CONTRACT_VERSION, fim: expect.stringMatching(/^api-/) });
      expect(CORE_JOB_CONTRACT_VERSION).toBe(4);
    } finally {
      await runner.close();
    }
  });
});
