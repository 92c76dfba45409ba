// SPEC §9 with Redis Sentinel: 1 master + 2 replicas + 3 sentinels of this file's own on
// loopback, an API and a worker started as operators start them (REDIS_SENTINELS +
// REDIS_SENTINEL_NAME). The upload routes answer what the embedded mode answers, and the master
// SIGKILLed under load costs only documented 503/504 answers until uploads succeed again.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedisClient, createLogger, createRedisClient, loadConfig } from '@censo/shared';
import { startServer } from '@censo/api';
import {
  expectAnswersLikeEmbedded,
  failoverUnderLoad,
  startHaDeployment,
  uploads,
  waitUntilReady,
  type HaDeployment,
} from '../helpers/failover.js';
import { API_KEY, expectEmptyDir, formWith, post } from '../helpers/http.js';
import { startSentinelTopology, type SentinelTopology } from '../helpers/redis-topology.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

let ha: HaDeployment<SentinelTopology> | undefined;

beforeAll(async () => {
  ha = await startHaDeployment(startSentinelTopology, `{sentinel-${randomUUID()}}`);
}, onThisMachine(60_000));

afterAll(async () => {
  await ha?.stop();
});

describe('Redis through Sentinel', () => {
  it('every upload route answers byte for byte what the embedded mode answers', async () => {
    await expectAnswersLikeEmbedded(ha!);
  });

  it(
    'the master SIGKILLed under load: only documented 503/504 meanwhile, then every upload succeeds',
    async () => {
      const before = await ha!.topology.masterPort();
      const report = await failoverUnderLoad({
        apiUrl: ha!.services.apiUrl,
        services: ha!.services,
        expected: ha!.expected,
        kill: async () => void (await ha!.topology.killMaster()),
        promoted: async () => (await ha!.topology.masterPort().catch(() => before)) !== before,
      });
      console.info(`sentinel failover: ${JSON.stringify(report)}`);
      await waitUntilReady([ha!.services.apiUrl, ha!.services.workerUrl]);
      await expectEmptyDir(ha!.uploadDir, 10_000);
    },
    onThisMachine(80_000),
  );
});

describe('a job the failover lost', () => {
  it(
    'written to the old master only (asynchronous replication): 503, never a 500',
    async () => {
      // What the new master lacks after such a failover is played by deleting the queue's keys
      // while the request waits: the job is gone and will never complete.
      const dir = await mkdtemp(path.join(os.tmpdir(), 'censo-sentinel-lost-'));
      const prefix = `{lost-${randomUUID()}}`;
      const config = loadConfig({
        ...ha!.topology.env,
        QUEUE_PREFIX: prefix,
        UPLOAD_DIR: dir,
        API_KEY,
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'silent',
        // Settles the wait well before the test's own limit if the 503 never comes.
        JOB_TIMEOUT_MS: '15000',
      });
      const api = await startServer(config, 'api', createLogger({ logLevel: 'silent' }, {}));
      const redis = createRedisClient(config.redis!, 'fail-fast', { enableOfflineQueue: true });
      try {
        const waiting = post(api, '/api/divergencias-rf', await formWith([uploads()[0]!.files[0]!]));
        const jobKeys = async () => (await redis.keys(`${prefix}:censo-jobs:*-*`)).length;
        await waitFor(async () => (await jobKeys()) > 0, { timeoutMs: onThisMachine(10_000), what: 'the job in Redis' });
        const keys = await redis.keys(`${prefix}:*`);
        await redis.del(...keys);
        const res = await waiting;
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ erro: 'Fila de processamento indisponível.' });
        await expectEmptyDir(dir);
      } finally {
        await api.close();
        await closeRedisClient(redis);
        await rm(dir, { recursive: true, force: true });
      }
    },
    onThisMachine(30_000),
  );
});
