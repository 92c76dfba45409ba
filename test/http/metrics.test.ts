// GET /metrics (SPEC §6): credentials (METRICS_TOKEN as a bearer token, or x-api-key), the
// Prometheus text format, and the named series after real requests.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, post, startTestServer, type TestServer } from '../helpers/http.js';
import { parseMetrics, sampleValue, type Sample } from '../helpers/metrics.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';

const METRICS_TOKEN = 'metrics-test-token';
const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');

async function scrape(server: { url: string }, headers: Record<string, string> = { authorization: `Bearer ${METRICS_TOKEN}` }) {
  const response = await fetch(`${server.url}/metrics`, { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function samples(server: { url: string }): Promise<Sample[]> {
  const { status, text } = await scrape(server);
  expect(status).toBe(200);
  return parseMetrics(text);
}

/**
 * The onResponse hook that feeds the metrics runs once the server has written the last byte,
 * which can be just after the client has read it: scrape again (bounded) until `check` passes.
 */
async function samplesWhen(server: { url: string }, check: (all: Sample[]) => void): Promise<Sample[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const all = await samples(server);
    try {
      check(all);
      return all;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(20);
    }
  }
}

describe('credentials', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ METRICS_TOKEN });
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('accepts METRICS_TOKEN as a bearer token, in the Prometheus text format', async () => {
    const res = await scrape(server);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.text).toContain('# TYPE censo_http_requests_total counter');
  });

  it('accepts the API key in x-api-key', async () => {
    expect((await scrape(server, { 'x-api-key': API_KEY })).status).toBe(200);
  });

  it.each([
    ['no credential', {}],
    ['a wrong bearer token', { authorization: `Bearer ${METRICS_TOKEN}x` }],
    ['the token in x-api-key', { 'x-api-key': METRICS_TOKEN }],
    ['the API key as a bearer token', { authorization: `Bearer ${API_KEY}` }],
    ['a wrong x-api-key', { 'x-api-key': 'nope' }],
  ])('401 with %s', async (_name, headers: Record<string, string>) => {
    const res = await scrape(server, headers);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text)).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
  });

  it('503 for everyone when neither METRICS_TOKEN nor API_KEY is set (fail closed, SPEC §4)', async () => {
    const bare = await startTestServer({ API_KEY: '' });
    try {
      for (const headers of [{}, { authorization: `Bearer ${METRICS_TOKEN}` }, { 'x-api-key': API_KEY }] as Record<string, string>[]) {
        const res = await scrape(bare, headers);
        expect(res.status).toBe(503);
        expect(JSON.parse(res.text)).toEqual({ erro: 'API não configurada (defina a env API_KEY).' });
      }
    } finally {
      await bare.dispose();
    }
  });
});

describe('series', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ METRICS_TOKEN });
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('default process metrics carry the censo_ prefix', async () => {
    const all = await samples(server);
    expect(sampleValue(all, 'censo_process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(all, 'censo_nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('counts requests by route pattern and status, never by raw URL', async () => {
    await fetch(`${server.url}/healthz?probe=${Math.random()}`);
    await fetch(`${server.url}/nao/existe/${Math.random()}`);
    const all = await samplesWhen(server, (all) => {
      expect(sampleValue(all, 'censo_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1);
      expect(sampleValue(all, 'censo_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    });
    expect(sampleValue(all, 'censo_http_request_duration_seconds_count', { route: '/healthz', status: '200' })).toBe(1);
    expect(all.some((sample) => Object.values(sample.labels).some((value) => value.includes('probe') || value.includes('/nao/')))).toBe(
      false,
    );
  });

  it('an upload: request, job outcome and duration, bytes, in-flight back to 0', async () => {
    const size = (await readFile(basico.retorno.json)).length;
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(200);
    const all = await samplesWhen(server, (all) =>
      expect(sampleValue(all, 'censo_http_requests_total', { method: 'POST', route: '/api/divergencias-rf', status: '200' })).toBe(1),
    );
    expect(sampleValue(all, 'censo_jobs_total', { kind: 'divergencias', outcome: 'ok' })).toBe(1);
    expect(sampleValue(all, 'censo_job_duration_seconds_count', { kind: 'divergencias', outcome: 'ok' })).toBe(1);
    expect(sampleValue(all, 'censo_upload_bytes_total', { field: 'retorno' })).toBe(size);
    expect(sampleValue(all, 'censo_inflight_uploads')).toBe(0);
    // Embedded runner: no queue to report.
    expect(sampleValue(all, 'censo_queue_jobs', { state: 'waiting' })).toBeUndefined();
  });

  it('a file the job rejects counts as outcome "rejected"', async () => {
    const form = await formWith([
      { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' },
      { field: 'txt', content: 'nada a ver\n', filename: 'censo.txt' },
    ]);
    const res = await post(server, '/api/retorno-rf', form);
    expect(res.status).toBe(422);
    const all = await samplesWhen(server, (all) =>
      expect(sampleValue(all, 'censo_http_requests_total', { route: '/api/retorno-rf', status: '422' })).toBe(1),
    );
    expect(sampleValue(all, 'censo_jobs_total', { kind: 'retorno-rf', outcome: 'rejected' })).toBe(1);
    expect(sampleValue(all, 'censo_upload_bytes_total', { field: 'txt' })).toBe('nada a ver\n'.length);
  });

  it('a refused upload (no job) counts no job but its request', async () => {
    const jobsTotal = (all: Sample[]) =>
      all.filter((sample) => sample.name === 'censo_jobs_total').reduce((sum, sample) => sum + sample.value, 0);
    const before = jobsTotal(await samples(server));
    const res = await post(server, '/api/divergencias-rf', await formWith([{ field: 'retorno', content: '{}', filename: 'retorno.csv' }]));
    expect(res.status).toBe(400);
    const all = await samplesWhen(server, (all) =>
      expect(sampleValue(all, 'censo_http_requests_total', { route: '/api/divergencias-rf', status: '400' })).toBe(1),
    );
    expect(jobsTotal(all)).toBe(before);
  });
});

describe('query rows', () => {
  let pg: TestPostgres;
  let schema: TestSchema;
  let server: TestServer;
  beforeAll(async () => {
    pg = await startTestPostgres();
    schema = await createTestSchema(pg.url);
    await createAuditsTable(schema.admin);
    await schema.admin.query(`
      INSERT INTO audits (auditable_id, user_id, action, created_at)
      SELECT g, g % 3, 'update', timestamp '2024-03-01' + g * interval '1 minute' FROM generate_series(1, 25) g`);
    server = await startTestServer({ METRICS_TOKEN, DATABASE_URL: schema.url });
  });
  afterAll(async () => {
    await server?.dispose();
    await schema?.drop();
    await pg?.stop();
  });

  it('counts the rows of JSON pages and CSV exports by query and format', async () => {
    const headers = { 'x-api-key': API_KEY };
    const page = await fetch(`${server.url}/api/query?query=audits&limit=10`, { headers });
    expect(page.status).toBe(200);
    expect(((await page.json()) as { count: number }).count).toBe(10);
    const csv = await fetch(`${server.url}/api/query?query=audits&format=csv`, { headers });
    expect(csv.status).toBe(200);
    expect((await csv.text()).trim().split('\r\n')).toHaveLength(26);
    await samplesWhen(server, (all) => {
      expect(sampleValue(all, 'censo_query_rows_total', { query: 'audits', format: 'json' })).toBe(10);
      expect(sampleValue(all, 'censo_query_rows_total', { query: 'audits', format: 'csv' })).toBe(25);
    });
  });
});
