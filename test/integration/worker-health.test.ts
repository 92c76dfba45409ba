// The worker's own health and metrics endpoint (SPEC §6): served only when PORT is set for the
// worker, with the /metrics credential rule of the API, counting the jobs this worker ran.
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig, type JobData } from '@censo/shared';
import { createBullmqRunner } from '@censo/api';
import { startWorker } from '@censo/worker';
import { logLines } from '../helpers/log-lines.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { freePort } from '../helpers/ports.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { processEnv } from '../helpers/queue-processes.js';
import { onThisMachine } from '../helpers/deadline.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';

const METRICS_TOKEN = 'metrics-token';

type WorkerProcess = ServiceProcess;

function startWorkerProcess(env: Record<string, string>): WorkerProcess {
  return startServiceProcess('services/worker/dist/main.js', env);
}

let redis: TestRedis;
let prefix: string;
let uploadDir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
  prefix = uniqueQueuePrefix();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-worker-health-'));
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await deleteKeys(redis.url, prefix);
  await redis.stop();
  await rm(uploadDir, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) =>
  processEnv({ redisUrl: redis.url, queuePrefix: prefix, uploadDir }, { METRICS_TOKEN, ...extra });

describe('worker health server', () => {
  it('is not started without PORT, so a worker never takes the API default port', async () => {
    const worker = startWorkerProcess(env());
    workers.push(worker);
    await worker.line('worker started');
    expect(worker.lines.some((l) => l.msg === 'worker health server listening')).toBe(false);
    expect(await worker.stop()).toBe(0);
  });

  it('serves /healthz, /readyz and authenticated /metrics counting the jobs it ran', async () => {
    const worker = startWorkerProcess(env({ PORT: '0', HOST: '127.0.0.1' }));
    workers.push(worker);
    const { url } = (await worker.line('worker health server listening')) as { url: string };

    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    // The health server listens as soon as the worker has started; /readyz says 503 until both
    // BullMQ workers run and Redis answers (a moment later), then 200. Read at once, it once got
    // the 503 in a quiet full run: it is the readiness that must come, not the first answer.
    await expect
      .poll(
        async () => {
          const ready = await fetch(`${url}/readyz`);
          return { status: ready.status, body: await ready.json() };
        },
        { timeout: onThisMachine(10_000) },
      )
      .toEqual({ status: 200, body: { status: 'ok', checks: { redis: 'ok' } } });

    const anonymous = await fetch(`${url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ erro: 'Credencial inválida (header x-api-key).' });

    // One job through the queue, run by this worker.
    const [basico] = fixtureCases();
    const dir = path.join(uploadDir, 'job-1');
    await mkdir(dir);
    await copyFile(basico!.retorno.json, path.join(dir, 'retorno.json'));
    const data: JobData = {
      kind: 'divergencias',
      retorno: { path: path.join(dir, 'retorno.json'), format: 'json' },
      resultPath: path.join(dir, 'resultado.json'),
    };
    const config = loadConfig({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, UPLOAD_DIR: uploadDir, LOG_LEVEL: 'silent' });
    const runner = createBullmqRunner(config, createLogger(config, {}));
    try {
      const result = await runner.run(data, { id: 'job-1', signal: new AbortController().signal, deadline: Date.now() + 15_000 });
      expect(result).toMatchObject({ ok: true, count: 9 });
    } finally {
      await runner.close();
    }

    const scraped = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(scraped.status).toBe(200);
    const text = await scraped.text();
    expect(text).toMatch(/censo_worker_jobs_total\{kind="divergencias",outcome="ok",role="worker"\} 1/);
    expect(text).toContain('censo_worker_job_duration_seconds_bucket');
    expect(await worker.stop()).toBe(0);
  });
});

describe('a worker stopped as it starts', () => {
  // A rollout's SIGTERM can reach a worker whose cancellations client is still subscribing; the
  // close failed that SUBSCRIBE ("Connection is closed.") and a warning came after 'worker closed'
  // in about one start in four, although nothing was wrong with Redis.
  it('closes without a warning, its last line "worker closed"', async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const { lines, sink } = logLines<{ level: number; msg: string }>();
      const config = loadConfig({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, UPLOAD_DIR: uploadDir, LOG_LEVEL: 'info' });
      const worker = await startWorker(config, createLogger(config, { role: 'worker' }, sink));
      await worker.close();
      // The failed command's rejection is handled a turn later.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(lines.filter((line) => line.level >= 40)).toEqual([]);
      expect(lines.at(-1)?.msg).toBe('worker closed');
    }
  });
});

describe('a worker whose Sentinels are all out of reach', () => {
  // BullMQ's orderly close waits for a connection end that never comes while Redis cannot be
  // reached (taskforcesh/bullmq#4656): such a worker waited out its drain and hand-back (~27 s)
  // with no job to drain, and was killed first by an orchestrator's shorter grace period.
  it('stops on SIGTERM without a drain: exit 0, "worker closed", nothing written but its JSON log', async () => {
    const proc = startWorkerProcess({
      REDIS_SENTINELS: `redis://127.0.0.1:${await freePort()}`,
      REDIS_SENTINEL_NAME: 'censo',
      UPLOAD_DIR: uploadDir,
      LOG_LEVEL: 'info',
    });
    workers.push(proc);
    let stderr = '';
    proc.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await proc.line('worker started');
    await proc.line('redis error'); // it is trying, and failing
    // Well short of the 20 s drain it used to wait out: a worker that drains is killed here.
    const kill = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
    const code = await proc.stop();
    clearTimeout(kill);
    expect(code).toBe(0);
    const messages = proc.lines.map((line) => line.msg);
    expect(messages).toContain('worker closed');
    expect(messages).not.toContain('drain time over: handing active jobs back to the queue');
    expect(stderr).toBe('');
  });
});
