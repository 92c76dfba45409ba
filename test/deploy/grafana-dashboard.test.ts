// The Grafana dashboard (deploy/monitoring/grafana/censo-api.json, issue 48): its structure (every
// panel on the Prometheus data source, every target a PromQL `expr`), its provisioning file, and
// that every metric its queries name is one the service really exports: read from the live
// /metrics of an API (`start:api`) and a worker (`start:worker`) in queue mode, after one upload
// and one batch, so the metrics made on first use exist. Recording rules it reads (`censo:…`) must
// be recorded by alertas.yml, from exported metrics in turn (queue-metrics.test.ts checks those).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FIXTURES_DIR } from '../helpers/fixtures.js';
import { API_KEY, formWith, type UploadFile } from '../helpers/http.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { request } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { read } from './recipes.js';
import { onThisMachine } from '../helpers/deadline.js';

const DASHBOARD = 'deploy/monitoring/grafana/censo-api.json';
const METRICS_TOKEN = 'token-das-metricas';
/**
 * Exported only with REDIS_SENTINELS, while these processes run on a plain REDIS_URL:
 * test/integration/redis-failover-metric.test.ts reads it from every role on Sentinel.
 */
const SENTINEL_ONLY = ['censo_redis_failovers_total'];
/**
 * Exported only with QUEUE_SHARDS above 1, while these processes run one queue:
 * test/integration/queue-shards.test.ts reads it from an API with two shards.
 */
const SHARDS_ONLY = ['censo_queue_shard_rests_total'];
const basicoRetorno = path.join(FIXTURES_DIR, 'basico', 'retorno.json');
const retorno: UploadFile = { field: 'retorno', path: basicoRetorno, filename: 'retorno.json' };

interface Target {
  refId: string;
  expr: string;
  datasource?: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
  gridPos: { h: number; w: number; x: number; y: number };
}
const dashboard = () => JSON.parse(read(DASHBOARD)) as { uid: string; title: string; panels: Panel[] };
const queryPanels = () => dashboard().panels.filter((p) => p.type !== 'row');

/** Words of PromQL that are not metric names: functions, aggregations, keywords, and Grafana's variables. */
const PROMQL_WORDS = new Set([
  ...['sum', 'max', 'min', 'avg', 'count', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless'],
  ...['rate', 'irate', 'increase', 'delta', 'deriv', 'histogram_quantile', 'vector', 'scalar', 'abs', 'clamp_min', 'offset', 'bool'],
  ...['topk', 'bottomk', 'quantile', 'label_replace', 'time', 'absent'],
]);

/**
 * The metric names a PromQL expression selects: identifiers outside label matchers `{…}`, range
 * selectors `[…]`, strings and `by (…)` lists, that are not PromQL's own words. Recording rules
 * (with a colon) are returned as they are.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...new Set([...bare.matchAll(/[a-zA-Z_:][\w:]*/g)].map((m) => m[0]).filter((word) => !PROMQL_WORDS.has(word)))];
}

/** A histogram's series names back to the name `# TYPE` declares, only when that histogram exists. */
function baseName(name: string, histograms: ReadonlySet<string>): string {
  const match = /^(.*)_(bucket|sum|count)$/.exec(name);
  return match && histograms.has(match[1]!) ? match[1]! : name;
}

let redis: TestRedis;
let uploadDir = '';
const queuePrefix = uniqueQueuePrefix();
const running: ServiceProcess[] = [];
let apiUrl = '';
let workerUrl = '';

async function exported(url: string): Promise<{ names: Set<string>; histograms: Set<string> }> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(response.status).toBe(200);
  const text = await response.text();
  const names = new Set<string>();
  const histograms = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram' || type === 'summary') histograms.add(name!);
  }
  return { names, histograms };
}

beforeAll(async () => {
  redis = await startTestRedis();
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-grafana-'));
  const env = {
    REDIS_URL: redis.url,
    QUEUE_PREFIX: queuePrefix,
    UPLOAD_DIR: uploadDir,
    API_KEY,
    METRICS_TOKEN,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '1',
    // On, as a state runs it: its counter exists only then.
    RATE_LIMIT_PER_MINUTE: '100000',
  };
  const api = startServiceProcess('services/api/dist/main.js', env, ['--role=api']);
  running.push(api);
  const worker = startServiceProcess('services/worker/dist/main.js', env);
  running.push(worker);
  apiUrl = String((await api.line('censo-api listening', onThisMachine(30_000))).url);
  workerUrl = String((await worker.line('worker health server listening', onThisMachine(30_000))).url);

  // One synchronous upload and one batch with one file.
  const sync = await request({ url: apiUrl }, 'POST', '/api/divergencias-rf', { body: await formWith([retorno]) });
  expect(sync.status).toBe(200);
  const lote = await request({ url: apiUrl }, 'POST', '/api/lotes', {
    body: JSON.stringify({ nome: 'painel' }),
    headers: { 'content-type': 'application/json' },
  });
  expect(lote.status).toBe(201);
  const id = String(lote.json().id);
  const sent = await request({ url: apiUrl }, 'POST', `/api/lotes/${id}/divergencias-rf`, { body: await formWith([retorno]) });
  expect(sent.status).toBe(202);
  await waitFor(async () => (await request({ url: apiUrl }, 'GET', `/api/lotes/${id}`)).json().tarefas !== undefined, {
    what: 'the batch',
  });
  await waitFor(
    async () => {
      const text = await (await fetch(`${apiUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      return /^censo_tarefas_total\{[^}]*estado="concluida"/m.test(text);
    },
    { timeoutMs: onThisMachine(30_000), intervalMs: 200, what: "the batch's task to finish" },
  );
}, onThisMachine(90_000));

afterAll(async () => {
  for (const proc of running.reverse()) await proc.stop();
  if (redis) {
    await deleteKeys(redis.url, queuePrefix);
    await redis.stop();
  }
  if (uploadDir) await rm(uploadDir, { recursive: true, force: true });
});

describe('metricNames (the PromQL parsing this test relies on)', () => {
  it('finds the metrics and recording rules, not functions, labels, strings, durations or variables', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, route) (rate(censo_http_request_duration_seconds_bucket{route=~"/api/.*", le="10"}[$__rate_interval])))',
      ),
    ).toEqual(['censo_http_request_duration_seconds_bucket']);
    expect(metricNames('max by (grupo) (increase(censo_redis_failovers_total[$__range])) - censo:lote_erros:razao1h')).toEqual([
      'censo_redis_failovers_total',
      'censo:lote_erros:razao1h',
    ]);
  });

  it('strips _bucket, _sum and _count only from a histogram that exists', () => {
    const histograms = new Set(['censo_job_duration_seconds']);
    expect(baseName('censo_job_duration_seconds_bucket', histograms)).toBe('censo_job_duration_seconds');
    expect(baseName('censo_job_duration_seconds_count', histograms)).toBe('censo_job_duration_seconds');
    // A counter whose name ends in _count is its own name.
    expect(baseName('censo_jobs_count', histograms)).toBe('censo_jobs_count');
  });
});

describe(DASHBOARD, () => {
  it('is a dashboard of panels on the Prometheus data source, each with PromQL targets, on a grid without overlaps', () => {
    const board = dashboard();
    expect(board.uid).toBe('censo-api');
    const panels = queryPanels();
    expect(panels.length).toBeGreaterThanOrEqual(10);
    expect(new Set(board.panels.map((p) => p.id)).size).toBe(board.panels.length);
    for (const panel of panels) {
      expect(panel.datasource?.type, panel.title).toBe('prometheus');
      expect(panel.description, panel.title).toBeTruthy();
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!) {
        expect(target.expr, panel.title).toMatch(/\S/);
        expect(target.datasource?.type ?? panel.datasource!.type).toBe('prometheus');
      }
    }
    // No two panels share a cell of the 24-column grid.
    const cells = new Set<string>();
    for (const { gridPos, title } of board.panels) {
      expect(gridPos.x + gridPos.w, title).toBeLessThanOrEqual(24);
      for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++)
        for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
          expect(cells.has(`${x},${y}`), `${title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
    }
  });

  it('shows what issue 48 asks for: rates and latencies per route, queue, job durations per kind, failures, failovers, memory per role, batch progress', () => {
    const exprs = queryPanels().flatMap((p) => p.targets!.map((t) => t.expr));
    const uses = (pattern: RegExp) => exprs.some((expr) => pattern.test(expr));
    expect(uses(/censo_http_requests_total.*\bby \([^)]*route/s) || uses(/by \([^)]*route[^)]*\) \(rate\(censo_http_requests_total/)).toBe(
      true,
    );
    expect(uses(/histogram_quantile\(.*censo_http_request_duration_seconds_bucket/)).toBe(true);
    expect(uses(/censo_queue_jobs/)).toBe(true);
    expect(uses(/by \(le, kind\) \(rate\(censo_worker_job_duration_seconds_bucket/)).toBe(true);
    expect(uses(/by \(outcome\).*censo_worker_jobs_total/)).toBe(true);
    expect(uses(/censo_redis_failovers_total/)).toBe(true);
    expect(uses(/censo_process_resident_memory_bytes/)).toBe(true);
    expect(uses(/censo_tarefas_total/)).toBe(true);
    expect(uses(/by \(shard\) \(increase\(censo_queue_shard_rests_total/)).toBe(true);
    // Base units: seconds and bytes, never milliseconds.
    expect(exprs.filter((expr) => /_ms\b|_milliseconds/.test(expr))).toEqual([]);
  });

  it('every metric its queries name is exported by the API or the worker (live /metrics), or recorded by alertas.yml', async () => {
    const api = await exported(apiUrl);
    const worker = await exported(workerUrl);
    const names = new Set([...api.names, ...worker.names]);
    const histograms = new Set([...api.histograms, ...worker.histograms]);
    const recorded = new Set(
      (parse(read('deploy/monitoring/alertas.yml')) as { groups: Array<{ rules: Array<{ record?: string }> }> }).groups.flatMap((g) =>
        g.rules.flatMap((r) => (r.record ? [r.record] : [])),
      ),
    );
    const missing: string[] = [];
    let checked = 0;
    for (const panel of queryPanels()) {
      for (const { expr } of panel.targets!) {
        for (const name of metricNames(expr)) {
          checked++;
          const known = name.includes(':')
            ? recorded.has(name)
            : names.has(baseName(name, histograms)) || SENTINEL_ONLY.includes(name) || SHARDS_ONLY.includes(name);
          if (!known) missing.push(`${panel.title}: ${name}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(missing).toEqual([]);
    // The exceptions are for the Sentinel-only and shards-only names, and they are absent here indeed.
    expect([...SENTINEL_ONLY, ...SHARDS_ONLY].filter((name) => names.has(name))).toEqual([]);
  });

  it('the provisioning file loads it from a folder of files', () => {
    const provisioning = parse(read('deploy/monitoring/grafana/censo-api.yml')) as {
      apiVersion: number;
      providers: Array<{ type: string; options: { path: string } }>;
    };
    expect(provisioning.apiVersion).toBe(1);
    expect(provisioning.providers).toHaveLength(1);
    expect(provisioning.providers[0]).toMatchObject({ type: 'file', options: { path: expect.stringMatching(/^\//) } });
  });
});
