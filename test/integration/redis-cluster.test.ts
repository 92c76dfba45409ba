// SPEC §9 with Redis Cluster: 3 masters with a replica each, of this file's own, on loopback;
// an API and a worker started as operators start them (REDIS_CLUSTER_NODES, a hash-tagged
// QUEUE_PREFIX). The upload routes answer what the embedded mode answers, and the master that
// holds the queue's slot SIGKILLed under load costs only documented 503/504 answers until its
// replica is promoted and uploads succeed again. A prefix without a hash tag stops the start.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  embeddedAnswers,
  expectSameAnswer,
  failoverUnderLoad,
  send,
  startQueueServices,
  uploads,
  waitUntilReady,
  type Answer,
  type QueueServices,
} from '../helpers/failover.js';
import { API_KEY, expectEmptyDir } from '../helpers/http.js';
import { startClusterTopology, type ClusterTopology } from '../helpers/redis-topology.js';

const BOARD_TOKEN = 'board-token';
const PREFIX = `{cluster-${randomUUID()}}`;
let topology: ClusterTopology | undefined;
let services: QueueServices | undefined;
let uploadDir: string | undefined;
let expected: Map<string, Answer>;

beforeAll(async () => {
  [expected, topology] = await Promise.all([embeddedAnswers(uploads()), startClusterTopology()]);
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-cluster-uploads-'));
  services = await startQueueServices({
    ...topology.env,
    QUEUE_PREFIX: PREFIX,
    UPLOAD_DIR: uploadDir,
    // Every Redis client of the API: the rate limiter's and the dashboard's too.
    RATE_LIMIT_PER_MINUTE: '1000000',
    BULL_BOARD_TOKEN: BOARD_TOKEN,
  });
  await waitUntilReady([services.apiUrl, services.workerUrl]);
}, 80_000);

afterAll(async () => {
  // The servers go whatever happens to the services' close.
  try {
    await services?.stop();
  } finally {
    await topology?.stop();
    if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
  }
});

describe('Redis Cluster', () => {
  it('every upload route answers byte for byte what the embedded mode answers', async () => {
    for (const upload of uploads()) expectSameAnswer(await send(services!.apiUrl, upload), expected.get(upload.name)!, upload.name);
    const board = await fetch(`${services!.apiUrl}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${BOARD_TOKEN}` } });
    expect(board.status).toBe(200);
    expect(JSON.stringify(await board.json())).toContain('censo-jobs');
    await expectEmptyDir(uploadDir!);
  });

  it.each([
    ['api', ['services/api/dist/main.js', '--role=api']],
    ['worker', ['services/worker/dist/main.js']],
  ])('%s: a QUEUE_PREFIX without a hash tag stops the start with one line', (_role, args) => {
    const run = spawnSync(process.execPath, args, {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { PATH: process.env.PATH ?? '', ...topology!.env, QUEUE_PREFIX: 'censo', API_KEY, LOG_LEVEL: 'silent', UPLOAD_DIR: uploadDir! },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      'QUEUE_PREFIX must hold a hash tag such as {censo} with REDIS_CLUSTER_NODES (one slot for the whole queue), got "censo"',
    );
  });

  it("the queue's master SIGKILLed under load: only documented 503/504 meanwhile, then every upload succeeds", async () => {
    const killed = await topology!.masterPortOf(PREFIX);
    const report = await failoverUnderLoad({
      apiUrl: services!.apiUrl,
      expected,
      kill: () => topology!.kill(killed),
      promoted: async () => (await topology!.masterPortOf(PREFIX).catch(() => killed)) !== killed,
    });
    console.info(`cluster failover: ${JSON.stringify(report)}`);
    await waitUntilReady([services!.apiUrl, services!.workerUrl]);
    await expectEmptyDir(uploadDir!, 10_000);
  }, 80_000);
});
