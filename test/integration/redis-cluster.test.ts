// SPEC §9 with Redis Cluster: 3 masters with a replica each, of this file's own, on loopback;
// an API and a worker started as operators start them (REDIS_CLUSTER_NODES, a hash-tagged
// QUEUE_PREFIX). The upload routes answer what the embedded mode answers, and the master that
// holds the queue's slot SIGKILLed under load costs only documented 503/504 answers until its
// replica is promoted and uploads succeed again. A prefix without a hash tag stops the start.
// With QUEUE_SHARDS=2 (issue 55) the two shards' slots lie on two masters; the master of one is
// SIGKILLed while `censo lote --servidor` sends a batch: no task lost, each recorded once, and the
// combined CSV is the local run's byte for byte.
import { spawnSync } from 'node:child_process';
import { link, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardPrefixes } from '@censo/shared';
import {
  expectAnswersLikeEmbedded,
  failoverUnderLoad,
  startHaDeployment,
  startQueueServices,
  waitUntilReady,
  type HaDeployment,
} from '../helpers/failover.js';
import { censo, ROOT } from '../cli/censo-process.js';
import { API_KEY, expectEmptyDir } from '../helpers/http.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { startClusterTopology, type ClusterTopology } from '../helpers/redis-topology.js';
import { sampleValue, scrapeMetrics } from '../helpers/metrics.js';
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
    "QUEUE_SHARDS=2 over two masters, one shard's master SIGKILLed during a batch: no task lost, each recorded once, the local run's CSV",
    async () => {
      const { topology } = ha!;
      const home = await topology.masterPortOf(PREFIX);
      // A prefix whose two shards lie on two masters, neither the one the next case kills (it needs its replica).
      let shards: string[] = [];
      for (let i = 0; i < 50; i++) {
        const candidate = shardPrefixes(`{shards-${randomUUID()}}`, 2);
        const [zero, one] = await Promise.all(candidate.map((prefix) => topology.masterPortOf(prefix)));
        if (zero !== one && one !== home) {
          shards = candidate;
          break;
        }
      }
      expect(shards).toHaveLength(2);
      const killed = await topology.masterPortOf(shards[1]!);

      const work = await mkdtemp(path.join(os.tmpdir(), 'censo-cluster-shards-'));
      let services: Awaited<ReturnType<typeof startQueueServices>> | undefined;
      try {
        // 120 schools of 500 persons (1,500 rows), hard links to one return: a few seconds of work.
        const bench = (await import(pathToFileURL(path.join(ROOT, 'bench', 'cli.mjs')).href)) as {
          schoolReturn(root: string): Promise<{ file: string }>;
        };
        const { file } = await bench.schoolReturn(path.join(work, 'data'));
        const folder = path.join(work, 'retornos');
        const FILES = 120;
        for (let i = 0; i < FILES; i++) {
          const regional = path.join(folder, `regional-${i % 6}`);
          await mkdir(regional, { recursive: true });
          await link(file, path.join(regional, `escola-${i}.xlsx`));
        }
        const local = await censo(['--quiet', 'lote', folder, '-o', path.join(work, 'local.csv')]);
        expect(local.code, local.stderr).toBe(0);

        const uploadDir = path.join(work, 'uploads');
        services = await startQueueServices({
          ...topology.env,
          QUEUE_PREFIX: shards[0]!,
          QUEUE_SHARDS: '2',
          UPLOAD_DIR: uploadDir,
          TAREFAS_POR_JOB: '5',
        });
        await waitUntilReady([services.apiUrl, services.workerUrl]);
        const { apiUrl } = services;
        const cli = censo(['--quiet', 'lote', folder, '--servidor', apiUrl, '-o', path.join(work, 'servidor.csv')], {
          env: { CENSO_API_KEY: API_KEY },
        });
        // Killed once the workers have ended some of the batch's tasks, with most still to run.
        const worker = services.worker;
        const done = () => worker.lines.filter((line) => line.msg === 'job done').length;
        await waitFor(() => done() >= 10, { timeoutMs: onThisMachine(30_000), what: 'the first tasks done' });
        let doneAtKill = FILES;
        // Synchronous uploads meanwhile, six at a time: once the killed shard has refused one, new
        // requests go to the live shard while it rests (shard-choice.ts), so most of those sent
        // before the promotion succeed. Drawn over both shards regardless, each client would spend
        // most of that time waiting on refusals (18 successes against 6, measured with the choice off).
        const sync = await failoverUnderLoad({
          apiUrl,
          services,
          expected: ha!.expected,
          kill: async () => {
            doneAtKill = done();
            await topology.kill(killed);
          },
          promoted: async () => (await topology.masterPortOf(shards[1]!).catch(() => killed)) !== killed,
        });
        console.info(`cluster shards failover, synchronous uploads: ${JSON.stringify(sync)}`);
        expect(sync.duringFailover.ok).toBeGreaterThan(4 * sync.duringFailover.failed);
        // The killed shard's rests are counted where an operator looks.
        const samples = await scrapeMetrics(apiUrl, { 'x-api-key': API_KEY });
        expect(sampleValue(samples, 'censo_queue_shard_rests_total', { shard: '1' })).toBeGreaterThanOrEqual(1);
        const run = await cli;
        expect(run.code, run.stderr).toBe(0);
        expect(doneAtKill).toBeLessThan(FILES);

        const api = async (route: string) =>
          (await (await fetch(`${apiUrl}${route}`, { headers: { 'x-api-key': API_KEY } })).json()) as Record<string, unknown>;
        const lotes = (await api('/api/lotes')).lotes as Array<{ id: string }>;
        expect(lotes).toHaveLength(1);
        // Each task's end recorded once: the batch counts FILES, all concluida.
        expect(await api(`/api/lotes/${lotes[0]!.id}`)).toMatchObject({
          estado: 'concluido',
          tarefas: { total: FILES, concluida: FILES, falhou: 0, cancelada: 0 },
        });
        const tarefas = (await api(`/api/lotes/${lotes[0]!.id}/tarefas?limit=1000`)).tarefas as Array<{ id: string; estado: string }>;
        expect(tarefas.filter((t) => t.estado !== 'concluida')).toEqual([]);
        // Every task ran to its end on the worker; a task whose end the killed master had taken
        // but not yet passed to its replica (Redis replicates asynchronously) runs again, and is
        // still recorded once (above). Requests of 50 and 20 in groups of 5: every task is a
        // group's, logged by `tarefa`; the lines without one are the synchronous uploads' jobs.
        const perTask = new Map<string, number>();
        for (const line of worker.lines.filter((l) => l.msg === 'job done' && l.tarefa !== undefined)) {
          const id = String(line.tarefa);
          perTask.set(id, (perTask.get(id) ?? 0) + 1);
        }
        expect(new Set(perTask.keys())).toEqual(new Set(tarefas.map((t) => t.id)));
        console.info(
          `cluster shards failover: ${FILES} tasks, ${doneAtKill} done at the kill, ` +
            `${[...perTask.values()].filter((n) => n > 1).length} run to their end twice`,
        );
        expect((await readFile(path.join(work, 'servidor.csv'))).equals(await readFile(path.join(work, 'local.csv')))).toBe(true);
        // The batch deleted, nothing of it is left in the folder.
        expect((await fetch(`${apiUrl}/api/lotes/${lotes[0]!.id}`, { method: 'DELETE', headers: { 'x-api-key': API_KEY } })).status).toBe(
          204,
        );
        await expectEmptyDir(uploadDir, 10_000);
      } finally {
        await services?.stop();
        await rm(work, { recursive: true, force: true });
      }
    },
    onThisMachine(120_000),
  );

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
