// GET /readyz follows Redis (SPEC §6): 200 while it answers, 503 once it is gone, 200 again when
// it is back, with no restart of the service. The shared local Redis cannot be stopped while other
// test files use it, so this file runs a redis-server of its own on a free port and kills it.
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/http.js';
import { sampleValue, scrapeMetrics } from '../helpers/metrics.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, stopRedisServer } from '../helpers/redis-server.js';
import { onThisMachine } from '../helpers/deadline.js';

const METRICS_TOKEN = 'readyz-metrics-token';

/** Bounded polling: the service notices a lost or returning Redis within a few seconds. */
async function readyzUntil(server: { url: string }, status: number, timeoutMs = onThisMachine(20_000)) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${server.url}/readyz`);
    const body = (await response.json()) as { status: string; checks?: Record<string, string> };
    if (response.status === status) return body;
    if (Date.now() > deadline) throw new Error(`/readyz still ${response.status} ${JSON.stringify(body)}, wanted ${status}`);
    await sleep(100);
  }
}

const scrape = (server: { url: string }) => scrapeMetrics(server.url, { authorization: `Bearer ${METRICS_TOKEN}` });

let port: number;
let redis: ChildProcess | null = null;
let server: TestServer;

beforeAll(async () => {
  port = await freePort();
  redis = await startRedisServer(port);
  server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${port}`, METRICS_TOKEN });
});

afterAll(async () => {
  await server?.dispose();
  await stopRedisServer(redis);
});

describe('/readyz with REDIS_URL', () => {
  it('200 while Redis answers, with its check', async () => {
    const body = await readyzUntil(server, 200);
    expect(body).toEqual({ status: 'ok', checks: { redis: 'ok' } });
  });

  it('reports the queue depth on /metrics while Redis answers', async () => {
    const all = await scrape(server);
    for (const state of ['waiting', 'active', 'delayed', 'failed']) {
      expect(sampleValue(all, 'censo_queue_jobs', { state }), state).toBe(0);
    }
  });

  it('503 once Redis is gone; liveness and /metrics still answer', async () => {
    await stopRedisServer(redis);
    redis = null;
    const body = await readyzUntil(server, 503);
    expect(body).toEqual({ status: 'indisponível', checks: { redis: 'falha' } });
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    // No stale queue depth while Redis cannot be read.
    expect(sampleValue(await scrape(server), 'censo_queue_jobs', { state: 'waiting' })).toBeUndefined();
  });

  it('200 again once Redis is back on the same address', async () => {
    redis = await startRedisServer(port);
    const body = await readyzUntil(server, 200);
    expect(body).toEqual({ status: 'ok', checks: { redis: 'ok' } });
  });
});

describe('/readyz embedded (no REDIS_URL, no DATABASE_URL)', () => {
  it('200: the process alone', async () => {
    const embedded = await startTestServer();
    try {
      const response = await fetch(`${embedded.url}/readyz`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'ok', checks: {} });
    } finally {
      await embedded.dispose();
    }
  });
});
