// What the monitoring and autoscaling recipes read, read from the real processes (the API and a
// worker started as the recipes start them, on a Redis of the test's own prefix):
// - the KEDA ScaledObject's Redis list is where a synchronous request's job waits, and its
//   Prometheus query is what counts a waiting asynchronous task (which is not in that list);
// - every censo_* metric that alertas.yml, its cases and the ScaledObject name is one the API or
//   the worker exposes, with the labels the rules select on (those that exist only with Sentinel
//   are named below and read from Sentinel processes elsewhere).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { JOB_QUEUE, TASK_QUEUE } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, type UploadFile } from '../helpers/http.js';
import { parseMetrics, sampleValue, type Sample } from '../helpers/metrics.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { postAsync, request, waitForTarefa, type Answer } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { read, yamlDocuments } from './recipes.js';
import { onThisMachine } from '../helpers/deadline.js';

const METRICS_TOKEN = 'token-das-metricas';

/**
 * Named by the rules but exposed only with REDIS_SENTINELS (the failovers the sentinels announce),
 * while these processes run on a plain REDIS_URL: test/integration/redis-failover-metric.test.ts
 * reads it from a worker and an `npm start` on Sentinel.
 */
const SENTINEL_ONLY = ['censo_redis_failovers_total'];
/**
 * Named by the rules but exposed only where the season's ledger is on (SPEC §13: embedded, or with
 * SAFRA_DATABASE_URL), while this queue-mode API has no database: test/integration/safra-season.test.ts
 * reads them from an API with the ledger.
 */
const LEDGER_ONLY = ['censo_safra_escolas_com_pendencias', 'censo_safra_dias_ate_prazo'];
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retorno: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };

interface Trigger {
  type: string;
  metadata: Record<string, string>;
}
const triggers = () =>
  (yamlDocuments('deploy/kubernetes/base/worker-scaledobject.yaml')[0] as { spec: { triggers: Trigger[] } }).spec.triggers;
/** QUEUE_PREFIX as the Kubernetes base sets it. */
const recipePrefix = () => /^\s*- QUEUE_PREFIX=(.+)$/m.exec(read('deploy/kubernetes/base/kustomization.yaml'))![1]!;

let redis: TestRedis;
let uploadDir = '';
const queuePrefix = uniqueQueuePrefix();
const running: ServiceProcess[] = [];

const env = () => ({
  REDIS_URL: redis.url,
  QUEUE_PREFIX: queuePrefix,
  UPLOAD_DIR: uploadDir,
  API_KEY,
  METRICS_TOKEN,
  HOST: '127.0.0.1',
  PORT: '0',
  LOG_LEVEL: 'info',
  WORKER_CONCURRENCY: '1',
  JOB_TIMEOUT_MS: '60000',
  // On, as a state runs it (and high enough never to refuse here): its counter is only there then.
  RATE_LIMIT_PER_MINUTE: '100000',
});

async function scrape(url: string): Promise<{ samples: Sample[]; names: Set<string> }> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(response.status).toBe(200);
  const text = await response.text();
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return { samples: parseMetrics(text), names };
}

let api: { url: string };
let worker: { url: string };
let apiBefore: Awaited<ReturnType<typeof scrape>>;
let waitingLength = -1;
let taskWaitingLength = -1;
let syncAnswer: Promise<Answer>;
let taskId = '';

beforeAll(async () => {
  redis = await startTestRedis();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-queue-metrics-'));
  const apiProcess = startServiceProcess('services/api/dist/main.js', env(), ['--role=api']);
  running.push(apiProcess);
  api = { url: String((await apiProcess.line('censo-api listening')).url) };

  // No worker yet: one task and one synchronous request wait in the queue.
  const accepted = await postAsync(api, '/api/divergencias-rf', [retorno]);
  expect(accepted.status).toBe(202);
  taskId = accepted.json().id as string;
  syncAnswer = request(api, 'POST', '/api/divergencias-rf', { body: await formWith([retorno]) });
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  try {
    const listName = triggers()
      .find((t) => t.type === 'redis-sentinel')!
      .metadata.listName!.replace(recipePrefix(), queuePrefix);
    await waitFor(async () => (await client.llen(listName)) === 1, {
      timeoutMs: onThisMachine(15_000),
      what: 'the synchronous job in the wait list',
    });
    waitingLength = await client.llen(listName);
    taskWaitingLength = await client.llen(`${queuePrefix}:${TASK_QUEUE}:wait`);
  } finally {
    client.disconnect();
  }
  apiBefore = await scrape(api.url);

  const workerProcess = startServiceProcess('services/worker/dist/main.js', env());
  running.push(workerProcess);
  worker = { url: String((await workerProcess.line('worker health server listening')).url) };
}, onThisMachine(60_000));

afterAll(async () => {
  for (const process of running.reverse()) await process.stop();
  if (redis) {
    await deleteKeys(redis.url, queuePrefix);
    await redis.stop();
  }
  if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
});

describe('the queue as KEDA and Prometheus read it', () => {
  it('a synchronous request waits in the list the redis-sentinel trigger counts; a task does not', () => {
    const listName = triggers().find((t) => t.type === 'redis-sentinel')!.metadata.listName!;
    expect(listName).toBe(`${recipePrefix()}:${JOB_QUEUE}:wait`);
    expect(waitingLength).toBe(1);
    // The task waits in a queue of its own (TASK_QUEUE), which that trigger does not count.
    expect(taskWaitingLength).toBe(1);
  });

  it('the API reports both: the list as censo_queue_jobs{state="waiting"}, the task as the prometheus trigger reads it', () => {
    expect(sampleValue(apiBefore.samples, 'censo_queue_jobs', { state: 'waiting' })).toBe(1);
    expect(sampleValue(apiBefore.samples, 'censo_queue_waiting_by_priority', { priority: 'assincrona' })).toBe(1);
    const query = triggers().find((t) => t.type === 'prometheus')!.metadata.query!;
    expect(query).toBe('max(censo_queue_waiting_by_priority{priority="assincrona"})');
  });

  it('both jobs run once a worker is there', async () => {
    expect((await syncAnswer).status).toBe(200);
    expect((await waitForTarefa(api, taskId)).estado).toBe('concluida');
  });

  it('every censo_* metric the rules, their cases and the ScaledObject name is exposed, with the labels they select on', async () => {
    await waitFor(async () => (await scrape(worker.url)).names.has('censo_worker_jobs_total'), { what: 'the worker metrics' });
    const apiNow = await scrape(api.url);
    const workerNow = await scrape(worker.url);
    const exposed = new Set([...apiBefore.names, ...apiNow.names, ...workerNow.names]);
    const texts = [
      ...(parse(read('deploy/monitoring/alertas.yml')) as { groups: Array<{ rules: Array<{ expr: string }> }> }).groups.flatMap((g) =>
        g.rules.map((r) => r.expr),
      ),
      read('deploy/monitoring/alertas.test.yml'),
      ...triggers().map((t) => t.metadata.query ?? ''),
    ];
    const named = new Set(texts.flatMap((text) => [...text.matchAll(/\bcenso_[a-z_]+/g)].map((m) => m[0])));
    expect(named.size).toBeGreaterThanOrEqual(5);
    const elsewhere = [...SENTINEL_ONLY, ...LEDGER_ONLY];
    expect([...named].filter((name) => !exposed.has(name) && !elsewhere.includes(name))).toEqual([]);
    expect(LEDGER_ONLY.filter((name) => !named.has(name))).toEqual([]);
    // The exception is for those names only: still named by the rules, and absent without Sentinel.
    expect(SENTINEL_ONLY.filter((name) => !named.has(name))).toEqual([]);
    expect(SENTINEL_ONLY.filter((name) => exposed.has(name))).toEqual([]);

    // The label values the rules select on.
    expect(apiNow.samples.some((s) => s.name === 'censo_http_requests_total' && s.labels.status === '200')).toBe(true);
    expect(sampleValue(workerNow.samples, 'censo_worker_jobs_total', { kind: 'divergencias', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(workerNow.samples.find((s) => s.name === 'censo_process_start_time_seconds')?.labels.role).toBe('worker');
  });
});
