// The CLI's client waits out a service busy for a moment on the requests it may send again as they
// were (no body): a look at a batch during a Redis failover must not end `censo lote --servidor`
// (redis-cluster.test.ts, the shards' failover, found it: a 503 on the batch's task list ended the
// run). Any request with a body is answered at once (the uploads wait in loops of their own). One
// rule says busy for both (isBusy): 429, or any 503 (a proxy's page while the service restarts
// too) but one for a missing setting, which ends the command at once, upload or look.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ERRORS } from '@censo/shared';
import { ApiClient, isBusy } from '../../cli/dist/api-client.js';
import { fixtureCases } from '../helpers/fixtures.js';
import { censo } from './censo-process.js';

let server: http.Server | undefined;
afterEach(async () => {
  const open = server;
  if (open) await new Promise((resolve) => open.close(resolve));
  server = undefined;
});

/** A server that answers `busy` to the first `times` requests, then 200 `{"ok":true}`; it counts them. */
async function serve(busy: { status: number; erro: string }, times: number) {
  const seen: string[] = [];
  server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    if (seen.length <= times) {
      res.writeHead(busy.status, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
      res.end(JSON.stringify({ erro: busy.erro }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const client = ApiClient.from({ servidor: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, chave: 'k' });
  return { client, seen };
}

describe('ApiClient.call: a service busy for a moment', () => {
  it.each([
    ['the queue away (a failover)', { status: 503, erro: ERRORS.QUEUE_UNAVAILABLE.message }],
    ['the storage away', { status: 503, erro: ERRORS.STORAGE_UNAVAILABLE.message }],
    ['the rate limit', { status: 429, erro: ERRORS.RATE_LIMITED.message }],
  ])('%s: a look without a body is sent again after Retry-After, and gets its answer', async (_what, busy) => {
    const { client, seen } = await serve(busy, 2);
    const response = await client.call('GET', '/api/lotes/x/tarefas');
    expect(response.status).toBe(200);
    expect(seen).toEqual(Array.from({ length: 3 }, () => 'GET /api/lotes/x/tarefas'));
  });

  it("a proxy's 503 that is not the service's JSON (the service restarting behind it) is waited out too", async () => {
    const seen: string[] = [];
    server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      if (seen.length === 1) {
        res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '1' });
        res.end('<html><body>502 Bad Gateway</body></html>');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const client = ApiClient.from({ servidor: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, chave: 'k' });
    expect((await client.call('GET', '/api/lotes/x')).status).toBe(200);
    expect(seen).toHaveLength(2);
  });

  it('isBusy: 429 and every 503 but a missing setting; nothing else, and the answer keeps its body', async () => {
    const answer = (status: number, body: string) => new Response(body, { status, headers: { 'content-type': 'application/json' } });
    const erro = (message: string) => JSON.stringify({ erro: message });
    expect(await isBusy(answer(429, erro(ERRORS.RATE_LIMITED.message)))).toBe(true);
    expect(await isBusy(answer(503, erro(ERRORS.OVERLOADED.message)))).toBe(true);
    expect(await isBusy(answer(503, erro('Comparações demais em andamento, tente novamente em instantes.')))).toBe(true);
    expect(await isBusy(answer(503, '<html>down</html>'))).toBe(true);
    expect(await isBusy(answer(503, erro(ERRORS.API_NOT_CONFIGURED.message)))).toBe(false);
    expect(await isBusy(answer(503, erro(ERRORS.QUERY_NOT_CONFIGURED.message)))).toBe(false);
    expect(await isBusy(answer(500, erro('x')))).toBe(false);
    expect(await isBusy(answer(409, erro('x')))).toBe(false);
    const kept = answer(503, erro(ERRORS.QUEUE_UNAVAILABLE.message));
    await isBusy(kept);
    expect(await kept.json()).toEqual({ erro: ERRORS.QUEUE_UNAVAILABLE.message });
  });

  it('a 503 for a missing setting (API_KEY) is answered at once', async () => {
    const { client, seen } = await serve({ status: 503, erro: ERRORS.API_NOT_CONFIGURED.message }, 1);
    expect((await client.call('GET', '/api/lotes')).status).toBe(503);
    expect(seen).toHaveLength(1);
  });

  it('a request with a body is answered at once (the uploads wait in loops of their own)', async () => {
    const { client, seen } = await serve({ status: 503, erro: ERRORS.QUEUE_UNAVAILABLE.message }, 1);
    expect((await client.call('POST', '/api/lotes', { body: '{}' })).status).toBe(503);
    expect(seen).toHaveLength(1);
  });
});

describe('censo lote --servidor: an upload answered 503 for a missing setting', () => {
  it("ends the command at once with the service's words (exit 1), after one upload: not 30 tries of each request, then each file", async () => {
    const work = await mkdtemp(path.join(os.tmpdir(), 'censo-busy-'));
    try {
      const [basico] = fixtureCases();
      const bytes = await readFile(basico!.retorno.json);
      for (let i = 0; i < 3; i++) await writeFile(path.join(work, `escola-${i}.json`), bytes);
      const seen: string[] = [];
      server = http.createServer((req, res) => {
        seen.push(`${req.method} ${req.url}`);
        req.resume();
        res.setHeader('content-type', 'application/json; charset=utf-8');
        if (req.method === 'POST' && req.url === '/api/lotes') {
          res.writeHead(201);
          res.end(JSON.stringify({ id: '6f1c2b9e-3a4d-4e5f-8a7b-1c2d3e4f5a6b', nome: 'x', estado: 'aberto' }));
          return;
        }
        res.writeHead(503, { 'retry-after': '1' });
        res.end(JSON.stringify({ erro: ERRORS.API_NOT_CONFIGURED.message }));
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const run = await censo(['lote', work, '--servidor', url, '-o', path.join(work, 'out.csv')], { env: { CENSO_API_KEY: 'k' } });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`${ERRORS.API_NOT_CONFIGURED.message} (HTTP 503)`);
      expect(seen.filter((line) => line.endsWith('/divergencias-rf'))).toHaveLength(1);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
