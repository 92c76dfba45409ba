// One JSON log line per request (pino), carrying ids, route, status, duration and the job's id
// and counts, and never a key, a name or a CPF (SPEC §4: tokens never appear in logs).
import { pbkdf2 } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, post } from '../helpers/http.js';
import { BOUNDARY, closing, openUpload, partHead, postHead } from '../helpers/raw-http.js';

const KEY = 'chave-secreta-do-teste-de-log';
const METRICS_TOKEN = 'token-secreto-de-metricas';
const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');

// Log lines are JSON objects of any shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Line = Record<string, any>;
const lines: Line[] = [];
let raw = '';
let server: RunningServer;
let uploadDir: string;

beforeAll(async () => {
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-log-test-'));
  const config = loadConfig({
    API_KEY: KEY,
    METRICS_TOKEN,
    HOST: '127.0.0.1',
    PORT: '0',
    UPLOAD_DIR: uploadDir,
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '1',
  });
  // A pino destination that keeps every line, as the process would write them to stdout.
  const destination = {
    write(chunk: string) {
      raw += chunk;
      lines.push(JSON.parse(chunk) as Line);
    },
  };
  server = await startServer(config, 'all', createLogger(config, { service: 'censo-api', role: 'all' }, destination));
});
afterAll(async () => {
  await server.close();
  await rm(uploadDir, { recursive: true, force: true });
});

/** The request line is written once the response is over, possibly just after the client read it. */
async function requestLine(reqId: string): Promise<Line> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = lines.filter((line) => line.reqId === reqId && line.msg === 'request completed');
    if (found.length > 0) {
      expect(found).toHaveLength(1);
      return found[0]!;
    }
    if (Date.now() > deadline) throw new Error(`no request line for ${reqId}`);
    await sleep(20);
  }
}

describe('request log', () => {
  it('an upload: one line with request id, route, status, duration, job id, kind, count and bytes', async () => {
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]),
      { 'x-api-key': KEY, 'x-request-id': 'req-log-1' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-log-1');
    const line = await requestLine('req-log-1');
    expect(line).toMatchObject({
      level: 30,
      service: 'censo-api',
      method: 'POST',
      route: '/api/divergencias-rf',
      status: 200,
      kind: 'divergencias',
      outcome: 'ok',
      count: (basico.expectedDivergencias as { divergencias: unknown[] }).divergencias.length,
      jobId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      ms: expect.any(Number),
      jobMs: expect.any(Number),
      bytes: { retorno: expect.any(Number) },
    });
    expect(typeof line.time).toBe('string');
  });

  it('a rejected file: the line carries the job id and the error code', async () => {
    const res = await post(
      server,
      '/api/retorno-rf',
      await formWith([
        { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' },
        { field: 'txt', content: 'outro arquivo\n', filename: 'censo.txt' },
      ]),
      { 'x-api-key': KEY, 'x-request-id': 'req-log-2' },
    );
    expect(res.status).toBe(422);
    const line = await requestLine('req-log-2');
    expect(line).toMatchObject({ route: '/api/retorno-rf', status: 422, kind: 'retorno-rf', outcome: 'rejected', code: 'TXT_MISMATCH' });
    expect(line.jobId).toEqual(expect.any(String));
  });

  it('a refused credential: a line with status 401, generated request id', async () => {
    const res = await post(server, '/api/divergencias-rf', await formWith([]), { 'x-api-key': `${KEY}-errada` });
    expect(res.status).toBe(401);
    const reqId = res.headers.get('x-request-id');
    expect(reqId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await requestLine(reqId!)).toMatchObject({ route: '/api/divergencias-rf', status: 401 });
  });

  it('a client that leaves mid-upload: status 499 at info level, no error-level stack', async () => {
    const upload = openUpload(server.url, '/api/divergencias-rf', {
      'x-api-key': KEY,
      'x-request-id': 'req-log-gone',
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
    });
    await upload.write(partHead('retorno', 'retorno.json'));
    await upload.write(Buffer.alloc(32 * 1024, 0x20));
    upload.request.destroy();
    const line = await requestLine('req-log-gone');
    expect(line).toMatchObject({ level: 30, route: '/api/divergencias-rf', status: 499 });
    expect(lines.filter((l) => l.reqId === 'req-log-gone' && l.level >= 50)).toEqual([]);
  });

  it('a client that reads the whole answer and hangs up at once (curl, Connection: close): status 200, not 499', async () => {
    // While libuv's thread pool is busy (uploads being written, say), every file read waits its
    // turn. A client that closes as soon as it has Content-Length bytes then closes before the
    // server would have learnt, by one more read, that the stored answer was over.
    let busy = true;
    const saturation = (async () => {
      const deadline = Date.now() + 20_000;
      const spin = () => new Promise<void>((resolve) => pbkdf2('x', 'y', 20_000, 32, 'sha256', () => resolve()));
      const lanes = Array.from({ length: 8 }, async () => {
        while (busy && Date.now() < deadline) await spin();
      });
      await Promise.all(lanes);
    })();
    try {
      const body = Buffer.concat([partHead('retorno', 'retorno.json'), await readFile(basico.retorno.json), closing()]);
      const head = postHead(
        server.url,
        '/api/divergencias-rf',
        { 'x-api-key': KEY, 'x-request-id': 'req-log-hangup', 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        body.length,
      );
      const { status, received, expected } = await new Promise<{ status: number; received: number; expected: number }>(
        (resolve, reject) => {
          const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
          let buffered = Buffer.alloc(0);
          socket.on('data', (chunk: Buffer) => {
            buffered = Buffer.concat([buffered, chunk]);
            const end = buffered.indexOf('\r\n\r\n');
            if (end < 0) return;
            const headers = buffered.subarray(0, end).toString('latin1');
            const length = Number(/^content-length: *(\d+)/im.exec(headers)?.[1] ?? NaN);
            const received = buffered.length - end - 4;
            if (received < length) return;
            socket.destroy();
            resolve({ status: Number(headers.split(' ')[1]), received, expected: length });
          });
          socket.once('error', reject);
          socket.once('close', () => reject(new Error('the server closed before the whole answer')));
          socket.write(head);
          socket.write(body);
        },
      );
      expect(status).toBe(200);
      expect(received).toBe(expected);
    } finally {
      busy = false;
      await saturation;
    }
    expect(await requestLine('req-log-hangup')).toMatchObject({ route: '/api/divergencias-rf', status: 200, outcome: 'ok' });
  });

  it('never writes a key, a token, a name or a CPF', async () => {
    await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}-errado` } });
    // A scrape's lines are below the route's log level by design, so wait on a later request's
    // line instead: the logger writes in order, so whatever the scrapes log comes before it.
    await fetch(`${server.url}/api/nada`, { headers: { 'x-request-id': 'req-log-barrier' } });
    await requestLine('req-log-barrier');
    expect(raw.length).toBeGreaterThan(0);
    expect(raw).not.toContain(KEY);
    expect(raw).not.toContain(METRICS_TOKEN);
    // What the uploads carried: names and CPFs of the fixture, in either response.
    const { divergencias } = basico.expectedDivergencias as { divergencias: { enviado: string; correto: string }[] };
    const secrets = divergencias.flatMap((d) => [d.enviado, d.correto]).filter((value) => value.length >= 6);
    expect(secrets.length).toBeGreaterThan(0);
    for (const value of secrets) expect(raw, value).not.toContain(value);
  });
});
