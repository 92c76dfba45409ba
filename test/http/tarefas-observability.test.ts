// What operators and integrators see of asynchronous intake (SPEC §7): metrics
// (censo_tarefas_total{rota,estado}, the queue's depth by priority), the request log's task and
// batch ids, and the OpenAPI document of every new route and header.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, type UploadFile } from '../helpers/http.js';
import { parseMetrics, sampleValue } from '../helpers/metrics.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, MONITOR_KEYS, postAsync, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';

// The OpenAPI document is walked freely by property name.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retorno: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };
const unreadable: UploadFile = { field: 'retorno', content: '[', filename: 'x.json' };

const redis = useTestRedis();

describe.each(MODES)('%s mode', (mode: Mode) => {
  const lines: Array<Record<string, unknown>> = [];
  let server: Harness;
  let accessLog: string;
  beforeAll(async () => {
    accessLog = path.join(await mkdtemp(path.join(os.tmpdir(), 'censo-access-')), 'access.log');
    server = await startHarness(mode, { redisUrl: redis.url, logLines: lines, env: { ACCESS_LOG: accessLog } });
  });
  afterAll(async () => {
    await server?.dispose();
    await rm(path.dirname(accessLog), { recursive: true, force: true });
  });
  const accessLine = async (reqId: string | null) => {
    const read = async () =>
      (await readFile(accessLog, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.requestId === reqId);
    await waitFor(async () => (await read()) !== undefined, { what: 'the access line' });
    return (await read())!;
  };

  const metrics = async () => parseMetrics((await request(server, 'GET', '/metrics')).bytes.toString('utf8'));
  const requestLine = async (reqId: string | null) => {
    await waitFor(() => lines.some((line) => line.reqId === reqId && line.msg === 'request completed'), { what: 'the request line' });
    return lines.find((line) => line.reqId === reqId && line.msg === 'request completed')!;
  };

  it('censo_tarefas_total counts tasks by route and the state they reached', async () => {
    const count = async (rota: string, estado: string) => sampleValue(await metrics(), 'censo_tarefas_total', { rota, estado }) ?? 0;
    const before = {
      criadas: await count('divergencias-rf', 'aguardando'),
      ok: await count('divergencias-rf', 'concluida'),
      falhou: await count('divergencias-rf', 'falhou'),
    };
    await waitForTarefa(server, (await postAsync(server, '/api/divergencias-rf', [retorno])).json().id as string);
    await waitForTarefa(server, (await postAsync(server, '/api/divergencias-rf', [unreadable])).json().id as string);
    expect(await count('divergencias-rf', 'aguardando')).toBe(before.criadas + 2);
    await waitFor(async () => (await count('divergencias-rf', 'concluida')) === before.ok + 1, { what: 'concluida counted' });
    expect(await count('divergencias-rf', 'falhou')).toBe(before.falhou + 1);
  });

  it('censo_queue_waiting_by_priority gives the tasks waiting (and, in queue mode, the synchronous jobs)', async () => {
    server.gate.close();
    try {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await postAsync(server, '/api/divergencias-rf', [retorno])).json().id as string);
      for (const id of ids.slice(0, 2)) await waitForTarefa(server, id, (m) => m.estado === 'processando');
      const samples = await metrics();
      expect(sampleValue(samples, 'censo_queue_waiting_by_priority', { priority: 'assincrona' })).toBe(1);
      expect(sampleValue(samples, 'censo_queue_waiting_by_priority', { priority: 'sincrona' })).toBe(mode === 'queue' ? 0 : undefined);
    } finally {
      server.gate.open();
    }
  });

  it('the request log carries the task and batch ids (and never the webhook secret)', async () => {
    const accepted = await postAsync(server, '/api/retorno-rf', [retorno, { field: 'txt', path: basico.txt, filename: 'c.txt' }]);
    const id = accepted.json().id as string;
    expect(await requestLine(accepted.headers.get('x-request-id'))).toMatchObject({
      status: 202,
      tarefa: id,
      jobId: id,
      kind: 'retorno-rf',
    });
    const read = await request(server, 'GET', `/api/tarefas/${id}`);
    expect(await requestLine(read.headers.get('x-request-id'))).toMatchObject({ route: '/api/tarefas/:id', tarefa: id });

    const created = await request(server, 'POST', '/api/lotes', {
      body: JSON.stringify({ webhook: 'http://127.0.0.1:9/x' }),
      headers: { 'content-type': 'application/json' },
    });
    const lote = created.json().id as string;
    expect(await requestLine(created.headers.get('x-request-id'))).toMatchObject({ status: 201, lote });
    const sent = await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, {
      body: await formWith([retorno], { referencia: 'e' }),
    });
    expect(await requestLine(sent.headers.get('x-request-id'))).toMatchObject({ status: 202, lote, tarefa: sent.json().id });
    const refused = await request(server, 'GET', `/api/lotes/${lote}/tarefas?limit=0`);
    expect(await requestLine(refused.headers.get('x-request-id'))).toMatchObject({ status: 400, lote });
    expect(JSON.stringify(lines)).not.toContain(created.json().webhook_segredo as string);
    // The access log (SPEC §8) says who read or created which task and batch.
    expect(await accessLine(read.headers.get('x-request-id'))).toMatchObject({
      chave: 0,
      route: '/api/tarefas/:id',
      status: 200,
      tarefa: id,
    });
    expect(await accessLine(sent.headers.get('x-request-id'))).toMatchObject({ chave: 0, status: 202, lote, tarefa: sent.json().id });
    expect(await readFile(accessLog, 'utf8')).not.toContain(created.json().webhook_segredo as string);
  });
});

describe('the OpenAPI document', () => {
  let server: Harness;
  let doc: Json;
  beforeAll(async () => {
    server = await startHarness('embedded', { redisUrl: redis.url });
    doc = (await (await fetch(`${server.url}/docs/json`)).json()) as Json;
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('documents Prefer and Idempotency-Key on the upload routes, and their 202 with its headers', () => {
    for (const route of ['/api/divergencias-rf', '/api/retorno-rf', '/api/censo-corrigido']) {
      const op = doc.paths[route].post as Json;
      const headers = (op.parameters as Json[]).filter((p) => p.in === 'header').map((p) => p.name);
      expect(headers, route).toEqual(expect.arrayContaining(['prefer', 'idempotency-key']));
      const accepted = op.responses['202'] as Json;
      expect(Object.keys(accepted.headers)).toEqual(
        expect.arrayContaining(['location', 'preference-applied', 'retry-after', 'idempotent-replayed']),
      );
      expect(accepted.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Tarefa' });
      expect(op.responses['409'].description).toContain('Requisição com esta Idempotency-Key em andamento.');
      expect(op.responses['422'].description).toContain('Idempotency-Key já usada com outra requisição.');
      expect(op.responses['503'].description).toContain('MAX_QUEUED_TAREFAS');
    }
  });

  it('describes the task and batch monitors as SPEC §7 names their fields', () => {
    expect(Object.keys(doc.components.schemas.Tarefa.properties).sort()).toEqual(MONITOR_KEYS);
    expect(doc.components.schemas.Tarefa.properties.estado.enum).toEqual(['aguardando', 'processando', 'concluida', 'falhou', 'cancelada']);
    expect(doc.components.schemas.Lote.properties.estado.enum).toEqual(['aberto', 'processando', 'concluido', 'cancelado']);
    expect(Object.keys(doc.components.schemas.Lote.properties.tarefas.properties)).toEqual([
      'total',
      'aguardando',
      'processando',
      'concluida',
      'falhou',
      'cancelada',
    ]);
  });

  it('documents every task and batch route with its statuses and messages', () => {
    const responses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses as Json);
    expect(responses('/api/tarefas/{id}', 'get')).toEqual(expect.arrayContaining(['200', '401', '404']));
    expect(responses('/api/tarefas/{id}/resultado', 'get')).toEqual(expect.arrayContaining(['200', '400', '404', '409', '422']));
    expect(responses('/api/tarefas/{id}', 'delete')).toEqual(expect.arrayContaining(['204', '404']));
    expect(responses('/api/lotes', 'post')).toEqual(expect.arrayContaining(['201', '400', '422']));
    expect(responses('/api/lotes/{id}/tarefas', 'get')).toEqual(expect.arrayContaining(['200', '400', '404']));
    expect(doc.paths['/api/tarefas/{id}/resultado'].get.responses['409'].description).toContain('Tarefa ainda não concluída.');
    expect(doc.paths['/api/tarefas/{id}/resultado'].get.responses['409'].description).toContain('Tarefa cancelada.');
    expect(doc.paths['/api/lotes/{id}/divergencias-rf'].post.responses['409'].description).toContain('Lote fechado.');
    expect(doc.paths['/api/lotes'].post.responses['400'].description).toContain('Webhook inválido: <motivo>.');
    expect(doc.paths['/api/lotes'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('webhook');
    const upload = doc.paths['/api/lotes/{id}/retorno-rf'].post.requestBody.content['multipart/form-data'].schema as Json;
    expect(upload).toMatchObject({ required: ['retorno', 'txt'], properties: { referencia: { type: 'string', maxLength: 255 } } });
    const list = (doc.paths['/api/lotes/{id}/tarefas'].get.parameters as Json[]).map((p) => `${p.in}:${p.name}`);
    expect(list).toEqual(expect.arrayContaining(['path:id', 'query:estado', 'query:cursor', 'query:limit']));
  });
});
