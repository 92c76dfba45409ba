// SPEC §9 with Redis Cluster: 3 masters with a replica each, of this file's own, on loopback;
// an API and a worker started as operators start them (REDIS_CLUSTER_NODES, a hash-tagged
// QUEUE_PREFIX). The upload routes answer what the embedded mode answers, and the master that
// holds the queue's slot SIGKILLed under load costs only documented 503/504 answers until its
// replica is promoted and uploads succeed again. A prefix without a hash tag stops the start.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAnswersLikeEmbedded, failoverUnderLoad, startHaDeployment, waitUntilReady, type HaDeployment } from '../helpers/failover.js';
import { API_KEY, expectEmptyDir } from '../helpers/http.js';
import { startClusterTopology, type ClusterTopology } from '../helpers/redis-topology.js';

const PREFIX = `{cluster-${randomUUID()}}`;
let ha: HaDeployment<ClusterTopology> | undefined;

beforeAll(async () => {
  ha = await startHaDeployment(startClusterTopology, PREFIX);
}, 80_000);

afterAll(async () => {
  await ha?.stop();
});

describe('Redis Cluster', () => {
  it('every upload route answers byte for byte what the embedded mode answers', async () => {
    await expectAnswersLikeEmbedded(ha!);
  });

  it.each([
    ['api', ['services/api/dist/main.js', '--role=api']],
    ['worker', ['services/worker/dist/main.js']],
  ])('%s: a QUEUE_PREFIX without a hash tag stops the start with one line', (_role, args) => {
    const run = spawnSync(process.execPath, args, {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: {
        PATH: process.env.PATH ?? '',
        ...ha!.topology.env,
        QUEUE_PREFIX: 'censo',
        API_KEY,
        LOG_LEVEL: 'silent',
        UPLOAD_DIR: ha!.uploadDir,
      },
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
    const killed = await ha!.topology.masterPortOf(PREFIX);
    const report = await failoverUnderLoad({
      apiUrl: ha!.services.apiUrl,
      services: ha!.services,
      expected: ha!.expected,
      kill: () => ha!.topology.kill(killed),
      promoted: async () => (await ha!.topology.masterPortOf(PREFIX).catch(() => killed)) !== killed,
    });
    console.info(`cluster failover: ${JSON.stringify(report)}`);
    await waitUntilReady([ha!.services.apiUrl, ha!.services.workerUrl]);
    await expectEmptyDir(ha!.uploadDir, 10_000);
  }, 80_000);
});
