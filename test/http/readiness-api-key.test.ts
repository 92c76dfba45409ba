// A start without API_KEY (SPEC §9, §4): the process runs fail-closed, says so in a warning at
// start, and is not ready: /readyz answers 503 with `"api_key": "ausente"`, so an orchestrator
// sends it no traffic. With the key, an embedded start is ready as before.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { startTestServer, type TestServer } from '../helpers/http.js';

/** Log lines are JSON objects of any shape. */
type Line = Record<string, unknown>;

describe('without API_KEY', () => {
  let server: RunningServer;
  let uploadDir: string;
  const lines: Line[] = [];

  beforeAll(async () => {
    uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-no-key-'));
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', UPLOAD_DIR: uploadDir, WORKER_CONCURRENCY: '1', ACCESS_LOG: '/dev/null' });
    const logger = createLogger(config, { service: 'censo-api' }, { write: (chunk: string) => void lines.push(JSON.parse(chunk) as Line) });
    server = await startServer(config, 'all', logger);
  });
  afterAll(async () => {
    await server?.close();
    await rm(uploadDir, { recursive: true, force: true });
  });

  it('logs one warning at start that names the setting', () => {
    const warnings = lines.filter((line) => line.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/^API_KEY is not set\b/);
  });

  it('/readyz answers 503 with api_key: ausente; /healthz is still alive', async () => {
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'indisponível', checks: { api_key: 'ausente' } });
    const alive = await fetch(`${server.url}/healthz`);
    expect(alive.status).toBe(200);
    expect(await alive.json()).toEqual({ status: 'ok' });
  });

  it('the 503 of §4 for a caller with a key, unchanged', async () => {
    const answer = await fetch(`${server.url}/api/query`, { headers: { 'x-api-key': 'qualquer' } });
    expect(answer.status).toBe(503);
    expect(await answer.json()).toEqual({ erro: 'API não configurada (defina a env API_KEY).' });
  });
});

describe('with API_KEY', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('an embedded start is ready: 200 ok, no api_key check', async () => {
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', checks: {} });
  });
});

describe('without API_KEY but with staff sign-in', () => {
  let server: TestServer;
  beforeAll(async () => {
    // The provider is not asked at start (discovery happens at the first sign-in): any loopback issuer will do.
    server = await startTestServer({
      API_KEY: '',
      OIDC_ISSUER: 'http://127.0.0.2:9',
      OIDC_CLIENT_ID: 'censo-api',
      PUBLIC_URL: 'http://127.0.0.1:3000',
      SESSION_SECRET: 'segredo-de-sessao-de-teste-0123456789abcdef',
      OIDC_ROLES_RETORNO: 'censo-retorno',
    });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('is ready: the signed-in people are its callers (a staff-only deployment is whole)', async () => {
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', checks: {} });
  });
});
