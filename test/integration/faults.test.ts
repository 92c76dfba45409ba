// Infrastructure faults against real processes: a private redis-server restarted under waiting
// requests, PostgreSQL cut and restored, and an upload folder that cannot be written. The shared
// 6379/5432 servers are never stopped (other test files use them concurrently).
// Covered elsewhere, not repeated here: a worker killed mid-job (retried on another worker) in
// test/integration/queue.test.ts; a statement timeout and an unreachable database at start in
// test/integration/query.test.ts.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, constants, createWriteStream, openSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { closeRedisClient, createLogger, createRedisClient, JOB_QUEUE, loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { startWorker } from '@censo/worker';
import { createBullmqRunner } from '../../services/api/dist/jobs/bullmq.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, post, startTestServer } from '../helpers/http.js';
import { createAuditsTable, createTestSchema, startTestPostgres } from '../helpers/postgres.js';
import { startRedisProxy } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, stopRedisServer } from '../helpers/redis-server.js';
import { onThisMachine } from '../helpers/deadline.js';

const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');
const silent = createLogger({ logLevel: 'silent' }, {});
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

const retorno = () => formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);

describe('Redis restarted while requests wait for their jobs', () => {
  it(
    'those requests get 503/504; later ones succeed without restarting the API or the worker',
    async () => {
      const port = await freePort();
      let redis = await startRedisServer(port);
      cleanups.push(() => stopRedisServer(redis));
      const uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-faults-redis-'));
      cleanups.push(() => rm(uploadDir, { recursive: true, force: true }));
      const env = {
        REDIS_URL: `redis://127.0.0.1:${port}`,
        QUEUE_PREFIX: `{faults-${randomUUID()}}`,
        UPLOAD_DIR: uploadDir,
        API_KEY,
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'silent',
        WORKER_CONCURRENCY: '1',
        JOB_TIMEOUT_MS: '5000',
      };
      const config = loadConfig(env);
      const api: RunningServer = await startServer(config, 'api', silent);
      cleanups.push(() => api.close());
      const worker = await startWorker(config, silent);
      cleanups.push(() => worker.close());
      await worker.waitUntilReady();

      // Baseline.
      expect((await post(api, '/api/divergencias-rf', await retorno())).status).toBe(200);

      // Keep the only worker slot busy with a job that reads from a FIFO nobody writes yet, so the
      // HTTP requests below stay waiting in the queue.
      const blockedDir = path.join(uploadDir, randomUUID());
      await mkdir(blockedDir);
      const fifo = path.join(blockedDir, 'retorno.json');
      execFileSync('mkfifo', [fifo]);
      const runner = createBullmqRunner(config, silent);
      cleanups.push(() => runner.close());
      const blockedClient = new AbortController();
      const blocked = runner
        .run(
          { kind: 'divergencias', retorno: { path: fifo, format: 'json' }, resultPath: path.join(blockedDir, 'r.json') },
          { id: path.basename(blockedDir), deadline: Date.now() + 60_000, signal: blockedClient.signal },
        )
        .catch((err: unknown) => err);

      const waiting = [1, 2, 3].map(async () => post(api, '/api/divergencias-rf', await retorno()));
      // Their folders exist (uploads stored, jobs queued) before Redis goes.
      for (let i = 0; i < 200 && (await readdir(uploadDir)).length < 4; i++) await sleep(20);
      expect((await readdir(uploadDir)).length).toBe(4);
      // ...and their jobs are in Redis, waiting behind the blocked one.
      const connection = createRedisClient(config.redis!, 'worker');
      cleanups.push(() => closeRedisClient(connection));
      const queue = new Queue(JOB_QUEUE, { connection, prefix: config.queuePrefix });
      cleanups.push(() => queue.close());
      await waitFor(async () => (await queue.getJobCounts('waiting')).waiting === 3, { what: 'three waiting jobs' });

      await stopRedisServer(redis);
      const answers = await Promise.all(waiting);
      for (const res of answers) {
        expect([503, 504]).toContain(res.status);
        expect(res.body).toEqual({
          erro: res.status === 503 ? 'Fila de processamento indisponível.' : 'Tempo esgotado ao processar o arquivo.',
        });
      }

      // Redis comes back (empty: no persistence). Free the worker from its stale job.
      redis = await startRedisServer(port);
      closeSync(openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK));
      const out = createWriteStream(fifo);
      // The stale job may be dropped (and its reader gone) while this is written: EPIPE is fine.
      out.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EPIPE') throw err;
      });
      out.end(await readFile(basico.retorno.json));
      blockedClient.abort(new Error('test done with it'));
      await blocked;
      await rm(blockedDir, { recursive: true, force: true });

      // Later requests succeed on the same API and worker (reconnection takes a moment).
      let status = 0;
      for (let i = 0; i < 60 && status !== 200; i++) {
        const res = await post(api, '/api/divergencias-rf', await retorno());
        status = res.status;
        if (status === 200) expect(res.body).toEqual(basico.expectedDivergencias);
        else await sleep(500);
      }
      expect(status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await post(api, '/api/divergencias-rf', await retorno())).status).toBe(200);
      expect((await fetch(`${api.url}/readyz`)).status).toBe(200);
      await expectEmptyDir(uploadDir, 10_000);
    },
    onThisMachine(90_000),
  );
});

describe('PostgreSQL down and back', () => {
  // An honest simulation, not a server restart: a TCP proxy (node:net) in front of the shared
  // PostgreSQL that drops every open connection and refuses new ones, then listens again. For
  // the service this is what a restart looks like: its pooled connections die and it must
  // reconnect. (Stopping the shared 5432 server would break other test files.)
  it(
    'the query route answers 503 { erro } while it is down and serves again when it is back',
    async () => {
      const pgServer = await startTestPostgres();
      cleanups.push(() => pgServer.stop());
      const schema = await createTestSchema(pgServer.url);
      cleanups.push(() => schema.drop());
      await createAuditsTable(schema.admin);
      await schema.admin.query(
        `INSERT INTO audits (auditable_id, user_id, action, created_at) VALUES (1, 7, 'create', '2025-01-02 10:00:00')`,
      );

      const target = new URL(schema.url);
      const proxy = await startRedisProxy(`redis://${target.hostname}:${target.port || 5432}`);
      cleanups.push(() => proxy.close());
      const viaProxy = new URL(schema.url);
      viaProxy.host = new URL(proxy.url).host;

      const server = await startTestServer({ DATABASE_URL: viaProxy.href });
      cleanups.push(() => server.dispose());
      const query = () => fetch(`${server.url}/api/query?query=audits`, { headers: { 'x-api-key': API_KEY } });

      let res = await query();
      expect(res.status).toBe(200);
      expect(((await res.json()) as { count: number }).count).toBe(1);

      await proxy.cut();
      for (let i = 0; i < 3; i++) {
        res = await query();
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({ erro: 'Banco de dados indisponível.' });
      }
      expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
      // Uploads do not depend on the database.
      expect((await post(server, '/api/divergencias-rf', await retorno())).status).toBe(200);

      await proxy.restore();
      let status = 0;
      for (let i = 0; i < 40 && status !== 200; i++) {
        res = await query();
        status = res.status;
        if (status !== 200) await sleep(250);
      }
      expect(status).toBe(200);
      expect(((await res.json()) as { rows: unknown[] }).rows).toHaveLength(1);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    },
    onThisMachine(60_000),
  );
});

describe('UPLOAD_DIR unusable', () => {
  const STORAGE = { erro: 'Armazenamento temporário indisponível.' };

  it('not a folder any more (ENOTDIR) → 503 { erro }; usable again → 200; deleted → recreated', async () => {
    const server = await startTestServer();
    cleanups.push(() => server.dispose());
    await rm(server.uploadDir, { recursive: true });
    await writeFile(server.uploadDir, 'a regular file where the folder was');
    const res = await post(server, '/api/divergencias-rf', await retorno());
    expect(res.status).toBe(503);
    expect(res.body).toEqual(STORAGE);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await readFile(server.uploadDir, 'utf8')).toBe('a regular file where the folder was');

    await rm(server.uploadDir);
    // Deleted under the running service: the per-request mkdir recreates it.
    expect((await post(server, '/api/divergencias-rf', await retorno())).status).toBe(200);
    await expectEmptyDir(server.uploadDir);
  });

  it('disk full (ENOSPC on a 1 MB tmpfs) → 503 { erro }, nothing half-written left', async () => {
    const mountpoint = await mkdtemp(path.join(os.tmpdir(), 'censo-full-'));
    cleanups.push(() => rm(mountpoint, { recursive: true, force: true }));
    // Needs mount privileges (root with CAP_SYS_ADMIN, as in CI's container); see docs/security.md.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mountpoint]);
    cleanups.push(async () => execFileSync('umount', ['-l', mountpoint]));
    const server = await startTestServer({ UPLOAD_DIR: mountpoint });
    cleanups.push(() => server.dispose());

    const big = Buffer.alloc(3 * 1024 * 1024, 0x20);
    big.write('[]');
    const res = await post(server, '/api/divergencias-rf', await formWith([{ field: 'retorno', content: big, filename: 'retorno.json' }]));
    expect(res.status).toBe(503);
    expect(res.body).toEqual(STORAGE);
    await expectEmptyDir(mountpoint);
    // Space is back once the failed upload is gone: a normal request works.
    expect((await post(server, '/api/divergencias-rf', await retorno())).status).toBe(200);
    await expectEmptyDir(mountpoint);
  });
});
