// Security properties over HTTP: keys never logged, per-key rate limit (429 { erro }), fail-closed
// auth on every /api/* route, uploads stored under server-generated names with 0600/0700 while
// the request is in flight, client file names never reaching the file system, and load shedding
// (503 + Retry-After) past MAX_INFLIGHT_UPLOADS.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyMatcher, createLogger, loadConfig, REDACTED_PATHS } from '@censo/shared';
import { startServer } from '@censo/api';
import { fixtureCases } from '../helpers/fixtures.js';
import { expectEmptyDir, formWith, post, startTestServer, type TestServer } from '../helpers/http.js';
import { closing, openUpload, partHead } from '../helpers/raw-http.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';

const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');
const retorno = () => formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);

describe('keys', () => {
  it('match exactly, any of several, whatever their lengths (digests compared in constant time)', () => {
    const matches = createKeyMatcher(['short', 'a-much-longer-key-0123456789']);
    expect(matches('short')).toBe(true);
    expect(matches('a-much-longer-key-0123456789')).toBe(true);
    // Prefixes, extensions and other lengths: timingSafeEqual on raw strings would throw on a
    // length mismatch; on fixed-size digests it just says no.
    for (const wrong of [undefined, '', 'shor', 'shortx', 'SHORT', 'a-much-longer-key', 'x'.repeat(10_000)])
      expect(matches(wrong)).toBe(false);
    expect(createKeyMatcher([])('anything')).toBe(false);
  });

  it('fail closed on the query route too: no key configured → 503 before any 401', async () => {
    const server = await startTestServer({ API_KEY: '' });
    try {
      for (const headers of [{}, { 'x-api-key': 'x' }] as Record<string, string>[]) {
        const res = await fetch(`${server.url}/api/query?query=audits`, { headers });
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({ erro: 'API não configurada (defina a env API_KEY).' });
      }
    } finally {
      await server.dispose();
    }
  });
});

describe('logs', () => {
  it('never contain the key (right or wrong) nor file contents, at trace level', async () => {
    const SECRET = 'chave-secreta-7f3a9c';
    const WRONG = 'chave-errada-b81d02';
    const MARKER = 'CONTEUDO-SIGILOSO-4411';
    const CPF = '52998224725';
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString('utf8'));
        cb();
      },
    });
    const uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-sec-logs-'));
    const config = loadConfig({
      API_KEY: SECRET,
      HOST: '127.0.0.1',
      PORT: '0',
      UPLOAD_DIR: uploadDir,
      LOG_LEVEL: 'trace',
      WORKER_CONCURRENCY: '1',
    });
    const logger = createLogger(config, { service: 'test' }, sink);
    const server = await startServer(config, 'all', logger);
    try {
      const auth = { 'x-api-key': SECRET };
      expect((await post(server, '/api/divergencias-rf', await retorno(), auth)).status).toBe(200);
      const bad = await formWith([{ field: 'retorno', content: `[{"Campo": "${MARKER}", "x": ${CPF}`, filename: 'retorno.json' }]);
      expect((await post(server, '/api/divergencias-rf', bad, auth)).status).toBe(400);
      const mismatch = await formWith([
        { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' },
        { field: 'txt', content: `00|${MARKER}\n30|1|OUTRO|1|${CPF}|${MARKER}|01/01/2000|1|M|P\n`, filename: `${MARKER}.txt` },
      ]);
      expect((await post(server, '/api/retorno-rf', mismatch, auth)).status).toBe(422);
      expect((await post(server, '/api/divergencias-rf', await retorno(), { 'x-api-key': WRONG })).status).toBe(401);
      expect((await fetch(`${server.url}/api/query?query=audits`, { headers: auth })).status).toBe(503);
      // Whoever logs a request's headers or the config itself gets them redacted.
      logger.info({ req: { headers: { 'x-api-key': SECRET } }, config }, 'explicit');
      await sleep(50);
    } finally {
      await server.close();
      await rm(uploadDir, { recursive: true, force: true });
    }
    const out = lines.join('');
    expect(out).toContain('request completed');
    expect(out).toContain('[redacted]');
    for (const secret of [SECRET, WRONG, MARKER, CPF, 'MARIA DA SILVA']) expect(out).not.toContain(secret);
    expect(REDACTED_PATHS).toContain('req.headers["x-api-key"]');
  });
});

describe('rate limit (RATE_LIMIT_PER_MINUTE)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ API_KEY: 'chave-a,chave-b', RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('429 { erro } with Retry-After past the limit, per key, on every /api/* route, after auth', async () => {
    const a = { 'x-api-key': 'chave-a' };
    for (let i = 0; i < 3; i++) expect((await post(server, '/api/divergencias-rf', await retorno(), a)).status).toBe(200);
    const limited = await post(server, '/api/divergencias-rf', await retorno(), a);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ erro: 'Limite de requisições excedido, tente novamente em instantes.' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // The same key on the query route shares the budget.
    const query = await fetch(`${server.url}/api/query`, { headers: a });
    expect(query.status).toBe(429);
    expect(await query.json()).toEqual({ erro: 'Limite de requisições excedido, tente novamente em instantes.' });
    // Another key has its own budget; a wrong key is refused by auth (401), not counted.
    expect((await post(server, '/api/divergencias-rf', await retorno(), { 'x-api-key': 'chave-b' })).status).toBe(200);
    expect((await post(server, '/api/divergencias-rf', await retorno(), { 'x-api-key': 'nope' })).status).toBe(401);
    // Health checks are not limited.
    for (let i = 0; i < 5; i++) expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await expectEmptyDir(server.uploadDir);
  });
});

describe('upload storage', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ MAX_INFLIGHT_UPLOADS: '2' });
  });
  afterAll(async () => {
    await server.dispose();
  });

  async function waitForFolders(n: number): Promise<string[]> {
    for (let i = 0; i < 500; i++) {
      const folders = await readdir(server.uploadDir);
      if (folders.length >= n) {
        const withFile = await Promise.all(
          folders.map((f) =>
            readdir(path.join(server.uploadDir, f)).then(
              (x) => x.length > 0,
              () => false,
            ),
          ),
        );
        if (withFile.filter(Boolean).length >= n) return folders;
      }
      await sleep(10);
    }
    throw new Error(`expected ${n} upload folders`);
  }

  it('mid-request: a server-generated folder (0700) and file name (0600); the client name goes nowhere', async () => {
    const upload = openUpload(server.url, '/api/divergencias-rf');
    await upload.write(partHead('retorno', '../../../../tmp/evil/../retorno.json'));
    const json = await readFile(basico.retorno.json);
    await upload.write(json.subarray(0, 200));
    const [folder] = await waitForFolders(1);
    expect(folder).toMatch(/^censo-[0-9a-f-]{36}$/);
    const dir = path.join(server.uploadDir, folder!);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual(['retorno.json']);
    expect((await stat(path.join(dir, 'retorno.json'))).mode & 0o777).toBe(0o600);
    const res = await upload.finish(Buffer.concat([json.subarray(200), closing()]));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(basico.expectedDivergencias);
    await expectEmptyDir(server.uploadDir);
    await expect(stat('/tmp/evil')).rejects.toThrow();
  });

  it('no rate limit with RATE_LIMIT_PER_MINUTE=0 (the default)', async () => {
    for (let i = 0; i < 8; i++) expect((await post(server, '/api/divergencias-rf', await retorno())).status).toBe(200);
    await expectEmptyDir(server.uploadDir);
  });

  it('file names with path separators, NUL or odd characters are only checked for their extension', async () => {
    for (const filename of ['..\\..\\retorno.json', '/etc/passwd.json', 'a\u0000b.json', '....json', 'x'.repeat(300) + '.json']) {
      const res = await post(server, '/api/divergencias-rf', await formWith([{ field: 'retorno', path: basico.retorno.json, filename }]));
      expect(res.status).toBe(200);
    }
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json/..' }]),
    );
    expect(res.status).toBe(400);
    await expectEmptyDir(server.uploadDir);
  });

  it('sheds uploads past MAX_INFLIGHT_UPLOADS with 503 + Retry-After, before reading the body', async () => {
    const held = [openUpload(server.url, '/api/divergencias-rf'), openUpload(server.url, '/api/divergencias-rf')];
    for (const h of held) await h.write(partHead('retorno', 'retorno.json'));
    await waitForFolders(0);
    // Both held requests are past onRequest once their folders exist.
    for (const h of held) await h.write('[');
    await waitForFolders(2);

    const shed = await post(server, '/api/divergencias-rf', await retorno());
    expect(shed.status).toBe(503);
    expect(shed.body).toEqual({ erro: 'Serviço sobrecarregado, tente novamente em instantes.' });
    expect(shed.headers.get('retry-after')).toBe('5');
    expect(await readdir(server.uploadDir)).toHaveLength(2);

    const json = await readFile(basico.retorno.json);
    for (const h of held) expect((await h.finish(Buffer.concat([json.subarray(1), closing()]))).status).toBe(200);
    // Capacity is back.
    expect((await post(server, '/api/divergencias-rf', await retorno())).status).toBe(200);
    await expectEmptyDir(server.uploadDir);
  });
});
