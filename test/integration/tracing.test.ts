// OpenTelemetry traces (SPEC §12, issue 48): in queue mode, with the API and a worker as separate
// processes exporting to a receiver of the test's own, one upload is one trace across both, with
// the right parents, the job's run and its storage work inside the worker, the trace id in the
// request's log lines, and no CPF, name or code of the file in any span. Off (no OTEL endpoint),
// no exporter nor SDK is loaded at all.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR } from '../helpers/fixtures.js';
import { API_KEY, formWith } from '../helpers/http.js';
import { SPAN_KIND, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const RETORNO = path.join(FIXTURES_DIR, 'basico', 'retorno.json');
const LOADED_MODULES = fileURLToPath(new URL('../helpers/loaded-modules.mjs', import.meta.url));

/** Every value of the fixture's return (and each side of its `enviado -- correto` pairs) long enough to mean something. */
async function personalValues(): Promise<string[]> {
  const rows = JSON.parse(await readFile(RETORNO, 'utf8')) as Array<Record<string, unknown>>;
  const values = new Set<string>();
  for (const row of rows) {
    for (const value of Object.values(row)) {
      values.add(String(value));
      for (const side of String(value).split(' -- ')) values.add(side.trim());
    }
  }
  // Shorter ones ("2", "30": a line, a record type) are numbers any span may hold.
  return [...values].filter((value) => value.length >= 5);
}

let redis: TestRedis;
let dir: string;
const queuePrefix = uniqueQueuePrefix();
const running: ServiceProcess[] = [];

function start(script: string, env: Record<string, string>, args: readonly string[] = []): ServiceProcess {
  const proc = startServiceProcess(
    script,
    { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', API_KEY, REDIS_URL: redis.url, QUEUE_PREFIX: queuePrefix, UPLOAD_DIR: dir, ...env },
    args,
  );
  running.push(proc);
  return proc;
}

async function upload(url: string, headers: Record<string, string> = {}): Promise<Response> {
  const form = await formWith([{ field: 'retorno', path: RETORNO, filename: 'retorno.json' }]);
  return fetch(`${url}/api/divergencias-rf`, { method: 'POST', body: form, headers: { 'x-api-key': API_KEY, ...headers } });
}

beforeAll(async () => {
  redis = await startTestRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-tracing-'));
}, onThisMachine(60_000));

afterAll(async () => {
  await Promise.all(running.map((proc) => proc.stop()));
  if (redis) {
    await deleteKeys(redis.url, queuePrefix);
    await redis.stop();
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('tracing on: an OTLP endpoint set', () => {
  let receiver: OtlpReceiver;
  let api: ServiceProcess;
  let apiUrl: string;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=teste',
    };
    api = start('services/api/dist/main.js', { ...otel, OTEL_SERVICE_NAME: 'censo-api-teste' }, ['--role=api']);
    const worker = start('services/worker/dist/main.js', { ...otel, OTEL_SERVICE_NAME: 'censo-worker-teste' });
    apiUrl = String((await api.line('censo-api listening', onThisMachine(30_000))).url);
    await worker.line('worker started', onThisMachine(30_000));
    await api.line('tracing on (OpenTelemetry, OTLP)');
    await worker.line('tracing on (OpenTelemetry, OTLP)');
  }, onThisMachine(60_000));

  afterAll(async () => {
    await receiver?.close();
  });

  /** The spans of one trace, once the worker's side and the request's answer have arrived. */
  async function traceOf(traceId: string): Promise<ReceivedSpan[]> {
    const of = () => receiver.spans.filter((span) => span.traceId === traceId);
    await waitFor(
      () =>
        of().some(
          (span) =>
            span.service === 'censo-api-teste' &&
            span.kind === SPAN_KIND.server &&
            span.attributes['http.response.status_code'] !== undefined,
        ) &&
        of().some((span) => span.service === 'censo-worker-teste' && span.kind === SPAN_KIND.consumer) &&
        of().some((span) => span.name === 'job thread') &&
        of().some((span) => span.name === 'job run'),
      {
        timeoutMs: onThisMachine(15_000),
        what: `the spans of trace ${traceId}`,
        seen: () => JSON.stringify(of().map((s) => [s.service, s.name, s.kind])),
      },
    );
    // The last spans of the worker's side (its consumer span ends after the job's) a moment more.
    await new Promise((resolve) => setTimeout(resolve, 500));
    return of();
  }

  it(
    'one upload is one trace across the API and the worker, with the right parents',
    async () => {
      const response = await upload(apiUrl);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const requestId = response.headers.get('x-request-id');

      // The request's span: a root SERVER span of the API, for the route (not its raw URL).
      await waitFor(
        () => receiver.spans.some((span) => span.kind === SPAN_KIND.server && span.attributes['http.route'] === '/api/divergencias-rf'),
        {
          timeoutMs: onThisMachine(15_000),
          what: 'the request span',
        },
      );
      const server = receiver.spans.find(
        (span) => span.kind === SPAN_KIND.server && span.attributes['http.route'] === '/api/divergencias-rf',
      )!;
      expect(server.parentSpanId).toBe('');
      const spans = await traceOf(server.traceId);
      const byId = new Map(spans.map((span) => [span.spanId, span]));
      const ancestors = (span: ReceivedSpan): ReceivedSpan[] => {
        const parent = byId.get(span.parentSpanId);
        return parent ? [parent, ...ancestors(parent)] : [];
      };

      // Both services, and the resource attributes from OTEL_RESOURCE_ATTRIBUTES.
      expect(new Set(spans.map((span) => span.service))).toEqual(new Set(['censo-api-teste', 'censo-worker-teste']));
      // The enqueue: a PRODUCER span of the API inside the request.
      const producer = spans.find((span) => span.kind === SPAN_KIND.producer && span.service === 'censo-api-teste');
      expect(producer, 'the API enqueues the job in a PRODUCER span').toBeDefined();
      expect(ancestors(producer!)).toContainEqual(server);
      // The run: a CONSUMER span of the worker, a child of the producer's (the context travelled in the job).
      const consumer = spans.find((span) => span.kind === SPAN_KIND.consumer && span.service === 'censo-worker-teste');
      expect(consumer, 'the worker runs the job in a CONSUMER span').toBeDefined();
      expect(ancestors(consumer!)).toContainEqual(producer);
      // The job's work inside the worker's span: its time on a thread, and the storage.
      const thread = spans.find((span) => span.name === 'job thread' && span.service === 'censo-worker-teste');
      expect(thread).toBeDefined();
      expect(ancestors(thread!)).toContainEqual(consumer);
      expect(thread!.attributes).toMatchObject({ 'censo.job.kind': 'divergencias', 'censo.job.ok': true });
      // And inside it, the job's own run on the thread, timed by the thread (issue 56): what is left
      // of the thread span is the wait for a thread.
      const run = spans.find((span) => span.name === 'job run' && span.parentSpanId === thread!.spanId);
      expect(run, 'the job run span, a child of the job thread span').toBeDefined();
      expect(run!.attributes).toMatchObject({ 'censo.job.kind': 'divergencias' });
      const storage = spans.filter((span) => span.name.startsWith('storage '));
      expect(storage.some((span) => span.service === 'censo-api-teste' && span.name === 'storage write')).toBe(true);
      expect(storage.some((span) => span.service === 'censo-worker-teste' && ancestors(span).includes(consumer!))).toBe(true);
      // Redis commands inside the trace, by name only.
      const redisSpans = spans.filter((span) => span.attributes['db.system'] === 'redis' || span.attributes['db.system.name'] === 'redis');
      expect(redisSpans.length).toBeGreaterThan(0);
      for (const span of redisSpans)
        expect(String(span.attributes['db.statement'] ?? span.attributes['db.query.text'] ?? '')).toMatch(/^[a-z]*$/i);
      // Every span's resource carries the operator's attributes.
      expect(spans.every((span) => span.texts.includes('teste'))).toBe(true);

      // The request's log lines and its access line carry the trace id.
      await waitFor(() => api.lines.some((line) => line.reqId === requestId && line.msg === 'request completed'), {
        what: 'the request line',
      });
      const requestLines = api.lines.filter((line) => line.reqId === requestId);
      expect(requestLines.length).toBeGreaterThan(0);
      for (const line of requestLines) expect(line).toMatchObject({ trace_id: server.traceId });
      await waitFor(() => api.lines.some((line) => line.log === 'access' && line.requestId === requestId), { what: 'the access line' });
      expect(api.lines.find((line) => line.log === 'access' && line.requestId === requestId)).toMatchObject({
        trace_id: server.traceId,
        span_id: server.spanId,
      });
    },
    onThisMachine(60_000),
  );

  it(
    'continues the trace of an incoming traceparent',
    async () => {
      const traceId = randomBytes(16).toString('hex');
      const parentId = randomBytes(8).toString('hex');
      const response = await upload(apiUrl, { traceparent: `00-${traceId}-${parentId}-01` });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const spans = await traceOf(traceId);
      const server = spans.find((span) => span.kind === SPAN_KIND.server);
      expect(server?.parentSpanId).toBe(parentId);
      expect(new Set(spans.map((span) => span.service))).toEqual(new Set(['censo-api-teste', 'censo-worker-teste']));
    },
    onThisMachine(60_000),
  );

  it(
    "a batch's file trace links to its batch's trace, and the job's run on its thread is in the file's trace",
    async () => {
      const created = await fetch(`${apiUrl}/api/lotes`, {
        method: 'POST',
        body: JSON.stringify({ nome: 'rastro' }),
        headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' },
      });
      expect(created.status).toBe(201);
      const lote = (await created.json()) as { id: string };
      const form = await formWith([{ field: 'retorno', path: RETORNO, filename: 'retorno.json' }]);
      const sent = await fetch(`${apiUrl}/api/lotes/${lote.id}/divergencias-rf`, {
        method: 'POST',
        body: form,
        headers: { 'x-api-key': API_KEY },
      });
      expect(sent.status).toBe(202);
      await sent.arrayBuffer();

      const serverOf = (route: string, method: string) =>
        receiver.spans.find(
          (span) =>
            span.kind === SPAN_KIND.server && span.attributes['http.route'] === route && span.attributes['http.request.method'] === method,
        );
      await waitFor(
        () => serverOf('/api/lotes', 'POST') !== undefined && serverOf('/api/lotes/:id/divergencias-rf', 'POST') !== undefined,
        {
          timeoutMs: onThisMachine(15_000),
          what: "the batch's and the file's request spans",
        },
      );
      const batch = serverOf('/api/lotes', 'POST')!;
      const file = serverOf('/api/lotes/:id/divergencias-rf', 'POST')!;
      expect(file.traceId).not.toBe(batch.traceId);
      const spans = await traceOf(file.traceId);
      // A span of the file's trace links to the batch's trace (a link, not a parent: each keeps its own).
      const links = spans.flatMap((span) => span.links);
      expect(links.map((link) => link.traceId)).toContain(batch.traceId);
      // The file's slow part shows inside its own trace: its job's time on a thread and its run there.
      expect(spans.some((span) => span.name === 'job thread' && span.service === 'censo-worker-teste')).toBe(true);
      expect(spans.some((span) => span.name === 'job run')).toBe(true);
    },
    onThisMachine(60_000),
  );

  it(
    'records no CPF, name, date or code of the file in any span',
    async () => {
      const values = await personalValues();
      expect(values).toContain('52998224725');
      expect(values).toContain('MARIA DE SOUZA');
      // A query string with a CPF: its value must not reach the request's span either.
      await fetch(`${apiUrl}/api/query?cpf=52998224725&nome=MARIA%20DE%20SOUZA`, { headers: { 'x-api-key': API_KEY } }).then((r) =>
        r.arrayBuffer(),
      );
      // A path no route matches, with a CPF in it: what a client typed is not recorded (issue 59).
      await fetch(`${apiUrl}/api/pessoas/52998224725`, { headers: { 'x-api-key': API_KEY } }).then((r) => r.arrayBuffer());
      await waitFor(() => receiver.spans.some((span) => span.attributes['http.route'] === '/api/query'), {
        timeoutMs: onThisMachine(10_000),
        what: 'the query span',
      });
      await waitFor(() => receiver.spans.some((span) => span.attributes['url.path'] === '(sem rota)'), {
        timeoutMs: onThisMachine(10_000),
        what: 'the unmatched request span',
      });
      // Span names are labels, never a function's source (an anonymous plugin's name is its code).
      expect(receiver.spans.map((span) => span.name).filter((name) => /=>|[(){};\n]|\bfunction\b|\bawait\b/.test(name))).toEqual([]);
      expect(receiver.spans.length).toBeGreaterThan(0);
      const leaks = receiver.spans.flatMap((span) =>
        span.texts.flatMap((text) =>
          values.filter((value) => text.includes(value)).map((value) => `${span.service} "${span.name}": ${value}`),
        ),
      );
      expect(leaks).toEqual([]);
    },
    onThisMachine(30_000),
  );
});

describe('tracing off: no OTLP endpoint', () => {
  it(
    'loads no exporter nor SDK, sends nothing and logs no trace ids',
    async () => {
      const receiver = await startOtlpReceiver();
      const modules = path.join(dir, 'modules-off.txt');
      try {
        // Everything but an endpoint: those alone turn nothing on.
        const otel = { OTEL_SERVICE_NAME: 'censo-off', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' };
        const options = { ...otel, NODE_OPTIONS: `--import ${LOADED_MODULES}`, LOADED_MODULES_FILE: modules };
        const api = start('services/api/dist/main.js', options, ['--role=api']);
        const worker = start('services/worker/dist/main.js', options);
        const url = String((await api.line('censo-api listening', onThisMachine(30_000))).url);
        await worker.line('worker started', onThisMachine(30_000));
        const response = await upload(url);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 1_000));

        const loaded = (await readFile(modules, 'utf8')).split('\n');
        // The API itself was seen: the hook worked.
        expect(loaded.some((url) => url.includes('services/api/dist/server.js'))).toBe(true);
        const sdk = loaded.filter((url) => /@opentelemetry\/(?!api\/)|bullmq-otel|@fastify\/otel|import-in-the-middle/.test(url));
        expect(sdk).toEqual([]);
        expect([...api.lines, ...worker.lines].filter((line) => 'trace_id' in line)).toEqual([]);
        expect(api.lines.some((line) => String(line.msg).startsWith('tracing on'))).toBe(false);
        expect(receiver.requests()).toBe(0);
      } finally {
        await receiver.close();
      }
    },
    onThisMachine(60_000),
  );
});
