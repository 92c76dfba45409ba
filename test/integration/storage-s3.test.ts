// S3 storage (SPEC §6, S3_BUCKET) against a real S3 protocol implementation (s3rver on loopback):
// API and worker as separate processes with different UPLOAD_DIRs answer every fixture as the
// embedded mode does and leave the bucket empty; cut uploads, abandoned requests, timeouts and a
// storage outage are answered as with the folder and leave nothing behind.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createStorage, loadConfig, type JobData, type Storage } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { fixtureCases, type FixtureCase } from '../helpers/fixtures.js';
import { API_KEY, formWith, post, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { openUpload, partHead } from '../helpers/raw-http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { S3_CREDENTIALS, startTestS3, type TestS3 } from '../helpers/s3.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const STORAGE_DOWN = 'Armazenamento temporário indisponível.';

let s3: TestS3;
let redis: TestRedis;
let embedded: TestServer;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  s3 = await startTestS3();
  redis = await startTestRedis();
  embedded = await startTestServer();
  // In-process services read their credentials where any AWS client does.
  Object.assign(process.env, S3_CREDENTIALS);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await embedded?.dispose();
  await s3?.dispose();
  await redis?.stop();
});

async function tempDir(name: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `censo-s3-${name}-`));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A service on this test's bucket and a queue of its own; closed, and its keys removed, after the file. */
async function startS3Service(role: 'all' | 'api', prefix: string, env: Record<string, string> = {}): Promise<RunningServer> {
  const queuePrefix = uniqueQueuePrefix();
  const config = loadConfig({
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    REDIS_URL: redis.url,
    QUEUE_PREFIX: queuePrefix,
    ...s3.env(prefix),
    ...env,
  });
  const server = await startServer(config, role);
  cleanups.push(() => server.close());
  cleanups.push(() => deleteKeys(redis.url, queuePrefix));
  return server;
}

/** The request's objects are deleted just after its response closes: wait for that. */
async function expectBucketEmpty(prefix: string): Promise<void> {
  await waitFor(async () => (await s3.keys(prefix)).length === 0, { what: 'the bucket to be empty' });
}

/** Status, content type and exact bytes of an answer. */
async function answer(server: { url: string }, route: string, files: UploadFile[]) {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', body: await formWith(files), headers: { 'x-api-key': API_KEY } });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    disposition: response.headers.get('content-disposition'),
    body: Buffer.from(await response.arrayBuffer()).toString('latin1'),
  };
}

function requests(fixture: FixtureCase): Array<{ route: string; files: UploadFile[] }> {
  const all: Array<{ route: string; files: UploadFile[] }> = [];
  for (const format of ['json', 'xlsx'] as const) {
    const retorno = { field: 'retorno', path: fixture.retorno[format], filename: `retorno.${format}` };
    const txt = { field: 'txt', path: fixture.txt, filename: path.basename(fixture.txt) };
    all.push({ route: '/api/divergencias-rf', files: [retorno] });
    all.push({ route: '/api/divergencias-rf?format=csv', files: [retorno] });
    all.push({ route: '/api/retorno-rf', files: [retorno, txt] });
    all.push({ route: '/api/censo-corrigido', files: [retorno, txt] });
  }
  return all;
}

describe('API and worker on two "hosts": separate processes, different UPLOAD_DIRs, one bucket', () => {
  let api: ServiceProcess;
  let worker: ServiceProcess;
  let apiUrl: string;
  let apiDir: string;
  let workerDir: string;
  const prefix = `hosts-${randomUUID()}/`;
  const queuePrefix = uniqueQueuePrefix();

  beforeAll(async () => {
    const parent = await tempDir('hosts');
    // The API's folder is never created: it stores nothing on its own disk.
    apiDir = path.join(parent, 'api-host');
    workerDir = path.join(parent, 'worker-host');
    const common = { REDIS_URL: redis.url, QUEUE_PREFIX: queuePrefix, API_KEY, LOG_LEVEL: 'info', ...s3.env(prefix) };
    worker = startServiceProcess('services/worker/dist/main.js', { ...common, UPLOAD_DIR: workerDir, WORKER_CONCURRENCY: '2' });
    cleanups.push(() => worker.stop());
    api = startServiceProcess('services/api/dist/main.js', { ...common, UPLOAD_DIR: apiDir, HOST: '127.0.0.1', PORT: '0' }, ['--role=api']);
    cleanups.push(() => api.stop());
    cleanups.push(() => deleteKeys(redis.url, queuePrefix));
    apiUrl = (await api.line('censo-api listening')).url as string;
    await worker.line('worker started');
  });

  it('answers every fixture, route and format byte for byte as the embedded mode does', async () => {
    let compared = 0;
    for (const fixture of fixtureCases()) {
      for (const { route, files } of requests(fixture)) {
        const [viaS3, viaEmbedded] = await Promise.all([answer({ url: apiUrl }, route, files), answer(embedded, route, files)]);
        expect(viaS3, `${fixture.name} ${route} ${files[0]!.filename}`).toEqual(viaEmbedded);
        compared++;
      }
    }
    expect(compared).toBeGreaterThanOrEqual(8);
  });

  it('leaves the bucket empty, never creates the API host folder, and cleans the worker scratch folder', async () => {
    await expectBucketEmpty(prefix);
    expect(existsSync(apiDir)).toBe(false);
    expect(await readdir(workerDir)).toEqual([]);
  });

  it('both processes report the bucket in /readyz', async () => {
    const ready = await fetch(`${apiUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', checks: { redis: 'ok', storage: 'ok' } });
  });
});

describe('S3 storage, API and worker in one process', () => {
  let server: RunningServer;
  const prefix = `one-${randomUUID()}/`;

  beforeAll(async () => {
    // The idle limit follows the machine: on a loaded one a 26 MB upload's own pauses passed a fixed
    // 1.5 s and it ended 408 before it reached the size limit's 413 (seen beside two busy loops).
    server = await startS3Service('all', prefix, {
      UPLOAD_DIR: await tempDir('one'),
      JOB_TIMEOUT_MS: '20000',
      UPLOAD_IDLE_MS: String(onThisMachine(1500)),
    });
  });

  const basico = () => fixtureCases().find((f) => f.name === 'basico') ?? fixtureCases()[0]!;
  const retornoFile = (): UploadFile => ({ field: 'retorno', path: basico().retorno.json, filename: 'retorno.json' });

  it('a file over 25 MB is cut mid-stream with 413: its multipart upload aborted, never completed, no object left', async () => {
    const before = s3.requests.length;
    const big = Buffer.alloc(26 * 1024 * 1024, 0x20);
    const res = await post(server, '/api/divergencias-rf', await formWith([{ field: 'retorno', content: big, filename: 'retorno.json' }]));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ erro: 'Arquivo excede o limite de 25 MB.' });
    await expectBucketEmpty(prefix);
    await expectMultipartAborted(before);
  });

  /** Since request `before`: one multipart upload of this test's prefix, parts sent, aborted, never completed. */
  async function expectMultipartAborted(before: number): Promise<void> {
    const sent = () => s3.requests.slice(before).filter((r) => r.url.includes(prefix));
    expect(sent().filter((r) => r.method === 'POST' && r.url.includes('?uploads'))).toHaveLength(1);
    expect(sent().filter((r) => r.method === 'PUT' && r.url.includes('partNumber=')).length).toBeGreaterThanOrEqual(1);
    await waitFor(() => sent().some((r) => r.method === 'DELETE' && r.url.includes('uploadId=')), { what: 'AbortMultipartUpload' });
    expect(sent().some((r) => r.method === 'POST' && r.url.includes('uploadId='))).toBe(false);
  }

  it('a client that leaves mid-upload: its multipart upload aborted, nothing in the bucket', async () => {
    const before = s3.requests.length;
    const upload = openUpload(server.url, '/api/divergencias-rf');
    await upload.write(partHead('retorno', 'retorno.json'));
    // Past one part (5 MiB), so a multipart upload is under way when the client goes.
    for (let i = 0; i < 7; i++) await upload.write(Buffer.alloc(1024 * 1024, 0x20));
    await waitFor(() => s3.requests.slice(before).some((r) => r.url.includes('partNumber=1&')), { what: 'a first part' });
    upload.request.destroy();
    await expectBucketEmpty(prefix);
    await expectMultipartAborted(before);
    // The service goes on answering.
    expect((await post(server, '/api/divergencias-rf', await formWith([retornoFile()]))).status).toBe(200);
    await expectBucketEmpty(prefix);
  });

  it('an upload that stalls past UPLOAD_IDLE_MS: 408, its multipart upload aborted, nothing in the bucket', async () => {
    const before = s3.requests.length;
    const upload = openUpload(server.url, '/api/divergencias-rf');
    await upload.write(partHead('retorno', 'retorno.json'));
    await upload.write(Buffer.alloc(6 * 1024 * 1024, 0x20));
    const res = await upload.response;
    expect(res.status).toBe(408);
    expect(res.body).toEqual({ erro: 'Tempo esgotado ao receber o arquivo.' });
    upload.request.destroy();
    await expectBucketEmpty(prefix);
    await expectMultipartAborted(before);
  });

  it('storage down: 503 with Retry-After and /readyz 503; back up: answers again without a restart', async () => {
    await s3.stop();
    try {
      const res = await post(server, '/api/divergencias-rf', await formWith([retornoFile()]));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ erro: STORAGE_DOWN });
      expect(res.headers.get('retry-after')).toBe('5');
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: 'indisponível', checks: { redis: 'ok', storage: 'falha' } });
    } finally {
      await s3.start();
    }
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const again = await post(server, '/api/divergencias-rf', await formWith([retornoFile()]));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(basico().expectedDivergencias);
    await expectBucketEmpty(prefix);
  });
});

describe('S3 storage misconfigured', () => {
  it('a bucket that does not exist: 503 with Retry-After for uploads, and /readyz says storage: falha', async () => {
    const config = loadConfig({ API_KEY, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', ...s3.env('x/'), S3_BUCKET: 'nao-existe' });
    const server = await startServer(config, 'all');
    cleanups.push(() => server.close());
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: fixtureCases()[0]!.retorno.json, filename: 'r.json' }]),
    );
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ erro: STORAGE_DOWN });
    expect(res.headers.get('retry-after')).toBe('5');
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'indisponível', checks: { storage: 'falha' } });
  });
});

describe('S3 storage with nobody to run the job', () => {
  it('a request past JOB_TIMEOUT_MS gets 504 and its objects are deleted', async () => {
    const prefix = `timeout-${randomUUID()}/`;
    // Role api: the queue has no worker.
    const api = await startS3Service('api', prefix, { JOB_TIMEOUT_MS: '1500' });
    const fixture = fixtureCases()[0]!;
    const res = await post(
      api,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: fixture.retorno.xlsx, filename: 'r.xlsx' }]),
    );
    expect(res.status).toBe(504);
    expect(res.body).toEqual({ erro: 'Tempo esgotado ao processar o arquivo.' });
    await expectBucketEmpty(prefix);
  });
});

describe('S3 storage in the embedded mode (no REDIS_URL)', () => {
  it('answers the fixtures and leaves the bucket empty', async () => {
    const prefix = `embedded-${randomUUID()}/`;
    const server = await startTestServer(s3.env(prefix));
    cleanups.push(() => server.dispose());
    for (const fixture of fixtureCases()) {
      const files: UploadFile[] = [
        { field: 'retorno', path: fixture.retorno.xlsx, filename: 'retorno.xlsx' },
        { field: 'txt', path: fixture.txt, filename: 'censo.txt' },
      ];
      const res = await post(server, '/api/retorno-rf', await formWith(files));
      expect(res.status, fixture.name).toBe(200);
      expect(res.body, fixture.name).toEqual(fixture.expectedPessoas);
    }
    await expectBucketEmpty(prefix);
    expect(await readdir(server.uploadDir)).toEqual([]);
  });
});

describe('S3 storage, a worker whose request ends while its job runs', () => {
  const prefix = `late-${randomUUID()}/`;
  let storage: Storage;

  beforeAll(async () => {
    const config = loadConfig({ ...s3.env(prefix), UPLOAD_DIR: await tempDir('late'), LOG_LEVEL: 'silent' });
    storage = await createStorage(config, createLogger(config, {}));
    cleanups.push(async () => storage.close());
  });

  /** A request's upload as the API stores it, and the job data that points at it. */
  async function stored() {
    const area = storage.area(randomUUID());
    await area.write('retorno.json', Readable.from([Buffer.from('[]')]), { bytes: 0 }, new AbortController().signal);
    const data: JobData = {
      kind: 'divergencias',
      retorno: { path: area.ref('retorno.json'), format: 'json' },
      resultPath: area.ref('resultado'),
    };
    return { area, data };
  }

  const writesResult = async (local: JobData) => {
    await writeFile(local.resultPath, '{"divergencias":[]}');
    return { ok: true as const, count: 0, bytes: 19 };
  };

  it('the result stays when the request is still there (for the API to send)', async () => {
    const { area, data } = await stored();
    await storage.runWithLocalFiles(data, writesResult);
    expect((await s3.keys(prefix)).sort()).toEqual([data.resultPath, data.retorno.path].sort());
    await area.remove();
    await expectBucketEmpty(prefix);
  });

  it('the result it stored after the API removed the request is removed too', async () => {
    const { area, data } = await stored();
    const before = s3.requests.length;
    await storage.runWithLocalFiles(data, async (local) => {
      await area.remove(); // the request ended: the API removed its objects
      return writesResult(local);
    });
    const resultUrl = `/${s3.bucket}/${data.resultPath}`;
    expect(s3.requests.slice(before).some((r) => r.method === 'PUT' && r.url.startsWith(resultUrl))).toBe(true);
    expect(await s3.keys(prefix)).toEqual([]);
  });
});

describe('S3 storage, the scratch folder a killed worker left', () => {
  it('at start, removes the job folders older than the job deadline and keeps everything else', async () => {
    const scratch = await tempDir('scratch');
    const hourAgo = new Date(Date.now() - 3_600_000);
    const stale = `${randomUUID()}-aB3dE9`;
    const recent = `${randomUUID()}-Xy12Zq`;
    const notOurs = 'backup-folder';
    for (const name of [stale, recent, notOurs]) {
      await mkdir(path.join(scratch, name));
      await writeFile(path.join(scratch, name, 'retorno.xlsx'), 'x');
    }
    await writeFile(path.join(scratch, 'notas.txt'), 'x');
    for (const name of [stale, notOurs, 'notas.txt']) await utimes(path.join(scratch, name), hourAgo, hourAgo);

    const config = loadConfig({ ...s3.env(`scratch-${randomUUID()}/`), UPLOAD_DIR: scratch, JOB_TIMEOUT_MS: '60000', LOG_LEVEL: 'silent' });
    const storage = await createStorage(config, createLogger(config, {}));
    cleanups.push(async () => storage.close());
    expect((await readdir(scratch)).sort()).toEqual([recent, notOurs, 'notas.txt'].sort());
  });
});
