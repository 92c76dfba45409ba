// censo_redis_failovers_total (issue 34, alert CensoRedisFailover), read from the real processes:
// a `start:worker`, an `npm start` (API and worker in one process) and a `start:api` (every role
// counts them since issue 48) on 1 master + 2 replicas + 3 sentinels of this file's own. The
// counter is there at 0 before anything happens, and a real failover (the master SIGKILLed),
// which every one of the three sentinels announces, counts exactly once in each process: in the
// worker's registry, and in the API's under `npm start`, whose API also follows the sentinels on a
// connection of its own (two watchers in one process, one count), and in `start:api`'s, which
// hears it on its queue events' connection only.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntilReady } from '../helpers/failover.js';
import { API_KEY } from '../helpers/http.js';
import { parseMetrics, sampleValue } from '../helpers/metrics.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { uniqueQueuePrefix } from '../helpers/redis.js';
import { SENTINEL_MASTER_NAME, startSentinelTopology, type SentinelTopology } from '../helpers/redis-topology.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const METRICS_TOKEN = 'token-das-metricas';
const METRIC = 'censo_redis_failovers_total';

let topology: SentinelTopology | undefined;
let uploadDir = '';
const running: ServiceProcess[] = [];
const listeners: Redis[] = [];
let workerUrl = '';
let combinedUrl = '';
let apiUrl = '';

const sentinelPorts = () => topology!.env.REDIS_SENTINELS.split(',').map((address) => Number(address.split(':')[1]));

/** Clients subscribed to the sentinel on `port` (CLIENT LIST's `sub=`); sentinels have no PUBSUB. */
async function subscribedClients(port: number): Promise<number> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const list = String(await redis.call('CLIENT', 'LIST'));
    return list.split('\n').filter((line) => /\bsub=[1-9]/.test(line)).length;
  } catch {
    return 0;
  } finally {
    redis.disconnect();
  }
}

async function failovers(url: string): Promise<number | undefined> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(response.status).toBe(200);
  return sampleValue(parseMetrics(await response.text()), METRIC, { grupo: SENTINEL_MASTER_NAME });
}

beforeAll(async () => {
  topology = await startSentinelTopology();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-failover-metric-'));
  const env = {
    ...topology.env,
    QUEUE_PREFIX: uniqueQueuePrefix(),
    UPLOAD_DIR: uploadDir,
    API_KEY,
    METRICS_TOKEN,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
  };
  const worker = startServiceProcess('services/worker/dist/main.js', env);
  running.push(worker);
  const combined = startServiceProcess('services/api/dist/main.js', env);
  running.push(combined);
  const api = startServiceProcess('services/api/dist/main.js', env, ['--role=api']);
  running.push(api);
  workerUrl = String((await worker.line('worker health server listening', onThisMachine(30_000))).url);
  combinedUrl = String((await combined.line('censo-api listening', onThisMachine(30_000))).url);
  apiUrl = String((await api.line('censo-api listening', onThisMachine(30_000))).url);
  await waitUntilReady([workerUrl, combinedUrl, apiUrl]);
  // Every sentinel must already have the processes' subscriptions when the master dies: one
  // from the worker, two from `npm start` (its worker's, and its API's queue events connection),
  // one from `start:api`.
  for (const port of sentinelPorts()) {
    await waitFor(async () => (await subscribedClients(port)) >= 4, {
      timeoutMs: onThisMachine(10_000),
      what: `the subscriptions on sentinel ${port}`,
    });
  }
}, onThisMachine(90_000));

afterAll(async () => {
  for (const redis of listeners) redis.disconnect();
  for (const proc of running.reverse()) {
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
    await proc.stop();
    clearTimeout(timer);
  }
  await topology?.stop();
  if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
});

describe('censo_redis_failovers_total', () => {
  it('is exposed at 0 from the start, by the worker, by npm start and by start:api', async () => {
    expect(await failovers(workerUrl)).toBe(0);
    expect(await failovers(combinedUrl)).toBe(0);
    expect(await failovers(apiUrl)).toBe(0);
  });

  it(
    'a real failover, announced by all three sentinels, counts once in each process',
    async () => {
      // The test hears the announcements too, from each sentinel: the count must be 1 even though
      // each process heard the failover three times.
      const heard = new Map<number, string>();
      for (const port of sentinelPorts()) {
        const listener = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: null });
        listener.on('error', () => undefined);
        listeners.push(listener);
        listener.on('message', (_channel: string, message: string) => heard.set(port, message));
        await listener.subscribe('+switch-master');
      }
      const killed = await topology!.killMaster();
      await waitFor(() => heard.size === 3, {
        timeoutMs: onThisMachine(30_000),
        intervalMs: 100,
        what: 'the three sentinels to announce the switch',
      });
      const promoted = await topology!.masterPort();
      expect(promoted).not.toBe(killed);
      for (const message of heard.values())
        expect(message).toMatch(new RegExp(`^${SENTINEL_MASTER_NAME} \\S+ \\d+ 127\\.0\\.0\\.1 ${promoted}$`));

      // A sentinel writes an announcement to all its subscribers at once: by the time the test has
      // heard all three, they are in the processes' sockets too, read before the scrape below.
      expect(await failovers(workerUrl)).toBe(1);
      expect(await failovers(combinedUrl)).toBe(1);
      expect(await failovers(apiUrl)).toBe(1);
    },
    onThisMachine(60_000),
  );
});
