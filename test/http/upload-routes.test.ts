// Black-box tests of POST /api/divergencias-rf and POST /api/retorno-rf on the embedded runner:
// real multipart over a socket, exact statuses and messages from SPEC §3–§5.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, post, startTestServer, type TestServer } from '../helpers/http.js';
import { openUpload, partHead } from '../helpers/raw-http.js';

const cases = fixtureCases();
const [basico] = cases;
if (!basico) throw new Error('no fixtures');

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

const retornoFile = (format: 'json' | 'xlsx', c = basico) => ({
  field: 'retorno',
  path: c.retorno[format],
  filename: `retorno.${format}`,
});
const txtFile = (c = basico) => ({ field: 'txt', path: c.txt, filename: 'censo.txt' });

describe.each(cases)('fixture $name', (c) => {
  describe.each(['json', 'xlsx'] as const)('retorno .%s', (format) => {
    it('POST /api/divergencias-rf answers the expected divergences', async () => {
      const res = await post(server, '/api/divergencias-rf', await formWith([retornoFile(format, c)]));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual(c.expectedDivergencias);
      await expectEmptyDir(server.uploadDir);
    });

    it('POST /api/retorno-rf answers the expected persons', async () => {
      const res = await post(server, '/api/retorno-rf', await formWith([retornoFile(format, c), txtFile(c)]));
      expect(res.status).toBe(200);
      expect(res.body).toEqual(c.expectedPessoas);
      await expectEmptyDir(server.uploadDir);
    });
  });
});

describe('authentication (SPEC §4)', () => {
  it('401 without the header', async () => {
    const res = await post(server, '/api/divergencias-rf', await formWith([retornoFile('json')]), {});
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
  });

  it('401 with a wrong key', async () => {
    const res = await post(server, '/api/retorno-rf', await formWith([retornoFile('json'), txtFile()]), {
      'x-api-key': `${API_KEY}x`,
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
  });

  it('accepts any of several comma-separated keys', async () => {
    const rotating = await startTestServer({ API_KEY: 'old-key, new-key' });
    try {
      for (const key of ['old-key', 'new-key']) {
        const res = await post(rotating, '/api/divergencias-rf', await formWith([retornoFile('json')]), { 'x-api-key': key });
        expect(res.status).toBe(200);
      }
      const res = await post(rotating, '/api/divergencias-rf', await formWith([retornoFile('json')]), { 'x-api-key': 'old-key, new-key' });
      expect(res.status).toBe(401);
    } finally {
      await rotating.dispose();
    }
  });

  it('answers 401 before the body is read, and closes the connection instead of draining it', async () => {
    const upload = openUpload(server.url, '/api/divergencias-rf', {
      'content-type': 'multipart/form-data; boundary=----censo-raw-boundary-5b1e',
    });
    await upload.write(partHead('retorno', 'retorno.json'));
    await upload.write(Buffer.alloc(64 * 1024, 0x20));
    // The body is left open: only the headers decide this answer.
    const res = await upload.response;
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
    expect(res.headers.connection).toBe('close');
    upload.request.destroy();
    await expectEmptyDir(server.uploadDir);
  });

  it('503 when no key is configured, with or without the header, before any 401', async () => {
    const unconfigured = await startTestServer({ API_KEY: '' });
    try {
      for (const headers of [{}, { 'x-api-key': 'anything' }] as Record<string, string>[]) {
        const res = await post(unconfigured, '/api/divergencias-rf', await formWith([retornoFile('json')]), headers);
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ erro: 'API não configurada (defina a env API_KEY).' });
      }
    } finally {
      await unconfigured.dispose();
    }
  });
});

describe('bad requests (SPEC §5)', () => {
  const cases400: Array<[string, string, () => Promise<FormData | string>, string]> = [
    ['retorno missing', '/api/divergencias-rf', () => formWith([], { nada: 'x' }), 'Arquivo ausente: envie o campo retorno.'],
    ['txt missing', '/api/retorno-rf', () => formWith([retornoFile('json')]), 'Arquivo ausente: envie o campo txt.'],
    ['retorno missing on retorno-rf', '/api/retorno-rf', () => formWith([txtFile()]), 'Arquivo ausente: envie o campo retorno.'],
    [
      'wrong retorno extension',
      '/api/divergencias-rf',
      () => formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.csv' }]),
      'Extensão inválida para retorno: envie .json ou .xlsx.',
    ],
    [
      'wrong txt extension',
      '/api/retorno-rf',
      () => formWith([retornoFile('json'), { field: 'txt', path: basico.txt, filename: 'censo.dat' }]),
      'Extensão inválida para txt: envie .txt.',
    ],
    [
      'unexpected file field (txt on divergencias-rf)',
      '/api/divergencias-rf',
      () => formWith([retornoFile('json'), txtFile()]),
      'Campo inesperado: txt.',
    ],
    [
      'retorno sent twice',
      '/api/divergencias-rf',
      () => formWith([retornoFile('json'), retornoFile('xlsx')]),
      'Campo enviado mais de uma vez: retorno.',
    ],
    [
      'unreadable json',
      '/api/divergencias-rf',
      () => formWith([{ field: 'retorno', content: 'isto não é json', filename: 'retorno.json' }]),
      '',
    ],
    [
      'text renamed .xlsx',
      '/api/divergencias-rf',
      () => formWith([{ field: 'retorno', content: 'Registro;Linha\n30;2\n', filename: 'RETORNO.XLSX' }]),
      '',
    ],
  ];

  it.each(cases400)('400 for %s', async (_name, route, body, message) => {
    const res = await post(server, route, await body());
    expect(res.status).toBe(400);
    const { erro } = res.body as { erro: string };
    if (message) expect(erro).toBe(message);
    else expect(erro).toMatch(/^Arquivo retorno ilegível: /);
    await expectEmptyDir(server.uploadDir);
  });

  it('400 for a body that is not multipart', async () => {
    const res = await post(server, '/api/divergencias-rf', JSON.stringify({ retorno: [] }), {
      'x-api-key': API_KEY,
      'content-type': 'application/json',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ erro: 'A requisição deve ser multipart/form-data.' });
  });

  it('400 for a text/plain body', async () => {
    const res = await post(server, '/api/retorno-rf', 'hello', { 'x-api-key': API_KEY, 'content-type': 'text/plain' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ erro: 'A requisição deve ser multipart/form-data.' });
  });

  it('413 for a file over 25 MB, and nothing left on disk', async () => {
    const big = new Uint8Array(25 * 1024 * 1024 + 1).fill(0x20);
    const res = await post(server, '/api/divergencias-rf', await formWith([{ field: 'retorno', content: big, filename: 'retorno.json' }]));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ erro: 'Arquivo excede o limite de 25 MB.' });
    await expectEmptyDir(server.uploadDir);
  });

  it('accepts a file of exactly 25 MB (the limit is inclusive)', async () => {
    const exact = new Uint8Array(25 * 1024 * 1024).fill(0x20);
    exact.set(new TextEncoder().encode('[]'));
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', content: exact, filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ divergencias: [] });
  });

  it('422 when the txt is not the one the return was issued for', async () => {
    const other = '00|1|x\n30|12345678|OUTRO|1|2|NOME|01/01/2000|1|MAE|PAI\n';
    const res = await post(
      server,
      '/api/retorno-rf',
      await formWith([retornoFile('json'), { field: 'txt', content: other, filename: 'censo.txt' }]),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ erro: 'O arquivo txt não corresponde ao retorno (linha 2).' });
    await expectEmptyDir(server.uploadDir);
  });
});

describe('routing and errors', () => {
  it('404 as { erro }', async () => {
    const res = await fetch(`${server.url}/api/nada`, { headers: { 'x-api-key': API_KEY } });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ erro: 'Rota não encontrada.' });
  });

  it('GET /healthz without auth', async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz in embedded mode is the process alone', async () => {
    const res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(200);
  });
});
