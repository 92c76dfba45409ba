// Section 4: GET /api/query on ≥ 1M audit rows in a dedicated schema of the local PostgreSQL:
// the first page, a page at depth ~900k (keyset cursor), the same depth with OFFSET in plain
// SQL, and a CSV export of every row with the API process's memory sampled from /proc.
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DATA, ROOT, median, memoryOf, percentile, sleep, startProcess, waitFor } from './lib.mjs';
import { API_KEY } from './http.mjs';

const require = createRequire(import.meta.url);
const pg = require('pg');

export const AUDIT_ROWS = 1_000_000;
const SCHEMA = 'censo_bench';
const CURSOR_SECRET = 'bench-cursor-secret';
const DEPTH = 900_000;

export async function postgresAvailable(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return (await client.query('SHOW server_version')).rows[0].server_version;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The audits table (as the `audited` gem makes it, see test/helpers/postgres.ts), loaded once. */
async function ensureAudits(client, log) {
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
  const exists = await client.query(`SELECT to_regclass('${SCHEMA}.audits') AS t`);
  if (exists.rows[0].t) {
    const { rows } = await client.query(`SELECT count(*)::int AS n, max(id)::int AS m FROM ${SCHEMA}.audits`);
    if (rows[0].n === AUDIT_ROWS && rows[0].m === AUDIT_ROWS) return false;
    await client.query(`DROP TABLE ${SCHEMA}.audits`);
  }
  const t0 = Date.now();
  await client.query(`
    CREATE TABLE ${SCHEMA}.audits (
      id bigserial PRIMARY KEY, auditable_id bigint, auditable_type varchar, associated_id bigint,
      associated_type varchar, user_id bigint, user_type varchar, username varchar, action varchar,
      audited_changes jsonb, version integer DEFAULT 0, comment varchar, remote_address varchar,
      request_uuid varchar, created_at timestamp(6))`);
  await client.query(`
    INSERT INTO ${SCHEMA}.audits (auditable_id, auditable_type, user_id, user_type, username, action,
      audited_changes, version, remote_address, request_uuid, created_at)
    SELECT g % 50000, 'Aluno', 1 + g % 200, 'User', 'usuario' || (1 + g % 200),
      (ARRAY['create','update','destroy'])[1 + g % 3],
      jsonb_build_object('nome', jsonb_build_array('NOME ' || g, 'NOME ' || (g + 1))), 1 + g % 5,
      '10.0.0.' || (g % 250), md5(g::text), timestamp '2024-01-01' + g * interval '30 seconds'
    FROM generate_series(1, ${AUDIT_ROWS}) AS g`);
  await client.query(`CREATE INDEX ON ${SCHEMA}.audits (created_at, id)`);
  await client.query(`CREATE INDEX ON ${SCHEMA}.audits (user_id, id)`);
  await client.query(`VACUUM ANALYZE ${SCHEMA}.audits`);
  log(`  loaded ${AUDIT_ROWS.toLocaleString('en-US')} audit rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return true;
}

async function timeGet(url, times) {
  const ms = [];
  let last;
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { headers: { 'x-api-key': API_KEY } });
    const body = await res.text();
    ms.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${body.slice(0, 200)}`);
    last = body;
  }
  return { ms, body: last };
}

async function timeSql(client, sql, times) {
  const ms = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    await client.query({ text: sql, rowMode: 'array' });
    ms.push(performance.now() - t0);
  }
  return ms;
}

const stats = (ms) => ({ p50: median(ms), p99: percentile(ms, 99), min: Math.min(...ms) });

export async function runQuery({ quick, databaseUrl, log = console.log }) {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  let api;
  try {
    await ensureAudits(admin, log);
    await admin.query(`SET search_path TO ${SCHEMA}`);
    const url = new URL(databaseUrl);
    url.searchParams.set('options', `-c search_path=${SCHEMA}`);
    const port = 38_199;
    api = startProcess('api-query', [path.join(ROOT, 'services/api/dist/main.js')], {
      API_KEY,
      HOST: '127.0.0.1',
      PORT: String(port),
      UPLOAD_DIR: path.join(DATA, 'uploads-query'),
      LOG_LEVEL: 'warn',
      REDIS_URL: '',
      DATABASE_URL: url.href,
      CURSOR_SECRET,
      QUERY_TIMEOUT_MS: '60000',
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`${base}/readyz`, { process: api });
    const n = quick ? 30 : 100;

    const firstUrl = `${base}/api/query?query=audits`;
    await timeGet(firstUrl, 10); // warm-up
    const first = await timeGet(firstUrl, n);
    // A cursor for "after id 900000", made by the route's own code with the deployment's secret:
    // exactly what the route would have handed out after walking 900 pages.
    const { encodeCursor } = await import(path.join(ROOT, 'services/api/dist/query/cursor.js'));
    const cursor = encodeCursor(CURSOR_SECRET, 'audits', new Map(), [String(DEPTH)]);
    const deepUrl = `${firstUrl}&cursor=${encodeURIComponent(cursor)}`;
    await timeGet(deepUrl, 10);
    const deep = await timeGet(deepUrl, n);
    const deepPage = JSON.parse(deep.body);
    if (deepPage.rows[0].id !== String(DEPTH + 1) || deepPage.count !== 1000) throw new Error(`deep page starts at ${deepPage.rows[0].id}`);
    // And one cursor taken from the route itself, to check that the constructed one is the real thing.
    const second = JSON.parse((await timeGet(firstUrl, 1)).body).next_cursor;
    if (second !== encodeCursor(CURSOR_SECRET, 'audits', new Map(), ['1000']))
      throw new Error('constructed cursor differs from the route’s');

    const select = `SELECT id, auditable_id, user_id, action, to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') AS created_at FROM audits`;
    const offsetSql = `${select} ORDER BY id OFFSET ${DEPTH} LIMIT 1000`;
    const keysetSql = `${select} WHERE id > ${DEPTH} ORDER BY id LIMIT 1000`;
    await timeSql(admin, offsetSql, 3);
    const offset = await timeSql(admin, offsetSql, quick ? 10 : 30);
    const keyset = await timeSql(admin, keysetSql, quick ? 10 : 30);

    // CSV export of every row, streamed; the API's RSS sampled every 50 ms.
    const csvRuns = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const before = memoryOf(api.pid);
      let peak = before.rss;
      const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(api.pid).rss)), 50);
      const t0 = performance.now();
      const res = await fetch(`${firstUrl}&format=csv`, { headers: { 'x-api-key': API_KEY } });
      let lines = 0;
      let bytes = 0;
      for await (const chunk of res.body) {
        bytes += chunk.length;
        for (let j = chunk.indexOf(10); j !== -1; j = chunk.indexOf(10, j + 1)) lines++;
      }
      const ms = performance.now() - t0;
      clearInterval(sampler);
      if (res.status !== 200 || lines !== AUDIT_ROWS + 1) throw new Error(`csv: HTTP ${res.status}, ${lines} lines`);
      csvRuns.push({
        ms,
        rows: lines - 1,
        bytes,
        rowsPerSec: (lines - 1) / (ms / 1000),
        rssBeforeMB: before.rss,
        rssPeakMB: peak,
        rssAfterMB: memoryOf(api.pid).rss,
      });
      await sleep(300);
    }
    const csv = {
      runs: csvRuns,
      ms: median(csvRuns.map((r) => r.ms)),
      rowsPerSec: median(csvRuns.map((r) => r.rowsPerSec)),
      bytes: csvRuns[0].bytes,
      rssBeforeMB: csvRuns[0].rssBeforeMB,
      rssPeakMB: Math.max(...csvRuns.map((r) => r.rssPeakMB)),
      rssGrowthMB: Math.max(...csvRuns.map((r) => r.rssPeakMB - r.rssBeforeMB)),
    };
    return {
      rows: AUDIT_ROWS,
      depth: DEPTH,
      first: stats(first.ms),
      deep: stats(deep.ms),
      offset: stats(offset),
      keyset: stats(keyset),
      csv,
      apiHwmMB: memoryOf(api.pid).hwm,
      requests: n,
    };
  } finally {
    await api?.stop();
    await admin.end();
  }
}
