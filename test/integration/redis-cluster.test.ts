// SPEC §9 with Redis Cluster: 3 masters with a replica each, of this file's own, on loopback;
// an API and a worker started as operators start them (REDIS_CLUSTER_NODES, a hash-tagged
// QUEUE_PREFIX). The upload routes answer what the embedded mode answers, and the master that
// holds the queue's slot SIGKILLed under load costs only documented 503/504 answers until its
// replica is promoted and uploads succeed again. A prefix without a hash tag stops the start.
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAnswersLikeEmbedded, failoverUnderLoad, startHaDeployment, waitUntilReady, type HaDeployment } from '../helpers/failover.js';
import { API_KEY, expectEmptyDir } from '../helpers/http.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { startClusterTopology, type ClusterTopology } from '../helpers/redis-topology.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;

const PREFIX = `{cluster-${randomUUID()}}`;
let ha: HaDeployment<ClusterTopology> | undefined;

beforeAll(async () => {
  ha = await startHaDeployment(startClusterTopology, PREFIX);
}, onThisMachine(80_000));

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
      timeout: onThisMachine(15_000),
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      'QUEUE_PREFIX must hold a hash tag such as {censo} with REDIS_CLUSTER_NODES (one slot for the whole queue), got "censo"',
    );
  });

  it("a batch's returns in group jobs (TAREFAS_POR_JOB=3): the group's scripts run on the queue's slot, every task concluida with its own result", async () => {
    const api = (route: string, init: RequestInit = {}) =>
      fetch(`${ha!.services.apiUrl}${route}`, { ...init, headers: { 'x-api-key': API_KEY, ...(init.headers ?? {}) } });
    const lote = (
      (await (await api('/api/lotes', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).json()) as {
        id: string;
      }
    ).id;
    const json = await readFile(basico.retorno.json!);
    const form = new FormData();
    for (let i = 0; i < 4; i++) {
      form.append('referencia', `escola-${i}`);
      form.append('retorno', new Blob([json]), `escola-${i}.json`);
    }
    const sent = await api(`/api/lotes/${lote}/divergencias-rf`, { method: 'POST', body: form });
    expect(sent.status).toBe(202);
    const ids = ((await sent.json()) as { tarefas: Array<{ id: string }> }).tarefas.map((t) => t.id);
    expect(ids).toHaveLength(4);
    for (const id of ids) {
      await waitFor(async () => ((await (await api(`/api/tarefas/${id}`)).json()) as { estado: string }).estado === 'concluida', {
        timeoutMs: onThisMachine(20_000),
        what: `task ${id}`,
      });
      expect(await (await api(`/api/tarefas/${id}/resultado`)).json()).toEqual(basico.expectedDivergencias);
    }
    // Their results go now, not at the end of their retention: the next case checks the folder is empty.
    for (const id of ids) expect((await api(`/api/tarefas/${id}`, { method: 'DELETE' })).status).toBe(204);
    await expectEmptyDir(ha!.uploadDir, 10_000);
  });

  it(
    "the queue's master SIGKILLed under load: only documented 503/504 meanwhile, then every upload succeeds",
    async () => {
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
    },
    onThisMachine(80_000),
  );
});
