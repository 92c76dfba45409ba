// Issue 50: `/api/*` answered without `X-Content-Type-Options: nosniff`. Every answer of the
// service carries it: JSON, CSV and XLSX answers, errors of every kind, the probes and the page.
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR } from '../helpers/fixtures.js';
import { API_KEY, formWith, startTestServer, type TestServer } from '../helpers/http.js';

// The basico case by its paths: the fixture list as a whole is not what this file is about.
const basico = {
  retorno: { json: path.join(FIXTURES_DIR, 'basico/retorno.json') },
  txt: path.join(FIXTURES_DIR, 'basico/censo.txt'),
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.dispose();
});

async function upload(format: string, key = API_KEY): Promise<Response> {
  const body = await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]);
  return fetch(`${server.url}/api/divergencias-rf?format=${format}`, { method: 'POST', headers: { 'x-api-key': key }, body });
}

const get = (route: string, headers: Record<string, string> = { 'x-api-key': API_KEY }) => fetch(`${server.url}${route}`, { headers });

describe('X-Content-Type-Options: nosniff', () => {
  it.each([
    ['json', 'application/json'],
    ['csv', 'text/csv'],
    ['xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  ])('on a %s answer', async (format, type) => {
    const answer = await upload(format);
    await answer.arrayBuffer();
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain(type);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each<[string, () => Promise<Response>, number]>([
    ['401 without a key', () => upload('json', 'wrong'), 401],
    ['400 for an unknown format', () => upload('ods'), 400],
    ['404 for an unknown route', () => get('/api/nao-existe'), 404],
    ['404 for an unknown task', () => get('/api/tarefas/00000000-0000-4000-8000-000000000000'), 404],
    ['400 for a path that does not decode', () => get('/api/%E0%A4%A'), 400],
    [
      '400 for a batch body that is not JSON',
      () =>
        fetch(`${server.url}/api/lotes`, {
          method: 'POST',
          headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' },
          body: '{',
        }),
      400,
    ],
  ])('on an error: %s', async (_what, send, status) => {
    const answer = await send();
    expect(answer.status).toBe(status);
    expect(answer.headers.get('content-type')).toContain('application/json');
    expect(await answer.json()).toHaveProperty('erro');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it.each(['/healthz', '/readyz', '/', '/pagina.json', '/api/lotes'])('on %s', async (route) => {
    const answer = await get(route);
    await answer.arrayBuffer();
    expect(answer.status).toBeLessThan(500);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it("on an answer Node's HTTP layer makes from the raw socket (malformed framing: 400)", async () => {
    const { port } = new URL(server.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.end('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'));
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
      socket.setTimeout(5_000, () => socket.destroy(new Error('no answer in 5 s')));
    });
    expect(raw.startsWith('HTTP/1.1 400 ')).toBe(true);
    expect(raw).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
  });
});
