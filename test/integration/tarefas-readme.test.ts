// The README's "Enviando muitos arquivos" examples run as an integrator would copy them: the curl
// script and the Python script (standard library only) send a folder as a batch and save its
// divergences, in embedded and queue mode; the Python signature check accepts a real webhook
// message and refuses a tampered one.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith } from '../helpers/http.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';

const run = promisify(execFile);
const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const expected = (basico.expectedDivergencias as { divergencias: unknown[] }).divergencias.length;

/** The code blocks of a language in the README's section. */
async function examples(language: string): Promise<string[]> {
  const readme = await readFile(README, 'utf8');
  const start = readme.indexOf('## Enviando muitos arquivos');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

let redis: TestRedis;
let work: string;
beforeAll(async () => {
  redis = await startTestRedis();
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-readme-'));
});
afterAll(async () => {
  await redis?.stop();
  await rm(work, { recursive: true, force: true });
});

/** A folder `retornos` of three returns, two of them byte-identical (an integrator's real case). */
async function folder(name: string): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(path.join(dir, 'retornos'), { recursive: true });
  await cp(basico.retorno.json, path.join(dir, 'retornos', 'escola-1.json'));
  await cp(basico.retorno.json, path.join(dir, 'retornos', 'escola-2.json'));
  await cp(basico.retorno.xlsx, path.join(dir, 'retornos', 'escola-3.xlsx'));
  return dir;
}

function csvReferencias(csv: string): string[] {
  return csv
    .split('\r\n')
    .slice(1)
    .filter(Boolean)
    .map((line) => line.split(',')[0]!);
}

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('the curl script sends the folder as a batch and saves divergencias.csv', { timeout: 60_000 }, async () => {
    const script = (await examples('sh')).find((block) => block.startsWith('#!/bin/sh'))!;
    const dir = await folder(`curl-${mode}`);
    await writeFile(path.join(dir, 'lote.sh'), script);
    await run('sh', ['lote.sh'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', BASE: server.url, CENSO_API_KEY: API_KEY },
      timeout: 50_000,
    });
    const csv = await readFile(path.join(dir, 'divergencias.csv'), 'utf8');
    expect(csv.split('\r\n')[0]).toBe('referencia,arquivo,codigo_na_escola,linha,campo,enviado,correto,is_filiacao,chave');
    const referencias = csvReferencias(csv);
    expect(referencias).toHaveLength(3 * expected);
    expect(new Set(referencias)).toEqual(new Set(['escola-1.json', 'escola-2.json', 'escola-3.xlsx']));
  });

  it('the Python script does the same with the standard library', { timeout: 60_000 }, async () => {
    const [script] = await examples('python');
    const dir = await folder(`python-${mode}`);
    await writeFile(path.join(dir, 'lote.py'), script!);
    await run('python3', ['lote.py', 'retornos'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', BASE: server.url, CENSO_API_KEY: API_KEY },
      timeout: 50_000,
    });
    const referencias = csvReferencias(await readFile(path.join(dir, 'divergencias.csv'), 'utf8'));
    expect(referencias).toHaveLength(3 * expected);
    expect(referencias.slice(0, expected)).toEqual(Array(expected).fill('escola-1.json'));
  });
});

it("the Python signature check accepts the service's webhook message and refuses a tampered one", async () => {
  const calls: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      calls.push({ headers: req.headers, body });
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const server = await startHarness('embedded', { redisUrl: redis.url });
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
    const created = await request(server, 'POST', '/api/lotes', {
      body: JSON.stringify({ webhook: url }),
      headers: { 'content-type': 'application/json' },
    });
    const { id, webhook_segredo: segredo } = created.json() as { id: string; webhook_segredo: string };
    const task = await request(server, 'POST', `/api/lotes/${id}/divergencias-rf`, {
      body: await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'r.json' }]),
    });
    await waitForTarefa(server, task.json().id as string);
    await request(server, 'POST', `/api/lotes/${id}/fechar`);
    await waitFor(() => calls.length === 1, { timeoutMs: 15_000, what: 'the webhook' });

    const check = (await examples('python')).find((block) => block.includes('def assinatura_valida'))!;
    const verify = `${check}\nimport json, sys\nprint(assinatura_valida(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]))\n`;
    const { headers, body } = calls[0]!;
    const valid = await run('python3', ['-c', verify, segredo, JSON.stringify(headers), body]);
    expect(valid.stdout.trim()).toBe('True');
    const tampered = await run('python3', ['-c', verify, segredo, JSON.stringify(headers), body.replace('concluido', 'cancelado')]);
    expect(tampered.stdout.trim()).toBe('False');
  } finally {
    await server.dispose();
    await new Promise((resolve) => receiver.close(resolve));
  }
});
