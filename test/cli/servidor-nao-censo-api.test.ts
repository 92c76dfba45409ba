// Issue 50: `censo lote --servidor` and `censo lotes` against an address that answers 200 with
// something other than the service's JSON — a proxy's login page (HTML), an empty body — end with
// one Portuguese line and exit 1, never a Node stack trace. A tiny server on 127.0.0.1, port 0.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { censo } from './censo-process.js';

const ANSWERS = {
  html: {
    type: 'text/html; charset=utf-8',
    body: '<!doctype html><html><body><form>Entrar</form></body></html>',
    what: 'resposta text/html',
  },
  vazia: { type: undefined, body: '', what: 'resposta vazia' },
} as const;

let server: Server;
let base: string;
let answer: keyof typeof ANSWERS = 'html';
let folder: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    const { type, body } = ANSWERS[answer];
    response.writeHead(200, type === undefined ? {} : { 'content-type': type });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  folder = await mkdtemp(path.join(os.tmpdir(), 'censo-nao-censo-api-'));
  await mkdir(path.join(folder, 'escola-a'));
  await writeFile(path.join(folder, 'escola-a', 'retorno.json'), '[]');
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(folder, { recursive: true, force: true });
});

describe.each(Object.keys(ANSWERS) as Array<keyof typeof ANSWERS>)('an address answering 200 with %s', (kind) => {
  it('censo lotes: one line naming the address, the route and what came back; exit 1', async () => {
    answer = kind;
    const run = await censo(['lotes', '--servidor', base], { env: { CENSO_API_KEY: 'chave' } });
    expect(run.stderr).toBe(
      `censo: o endereço ${base} não respondeu como um censo-api (HTTP 200 em /api/lotes, ${ANSWERS[kind].what}): ` +
        'confira --servidor (um proxy ou uma página de login no caminho?).\n',
    );
    expect(run.code).toBe(1);
  });

  it('censo lote --servidor: the same line, nothing on stdout; exit 1', async () => {
    answer = kind;
    const run = await censo(['lote', folder, '--servidor', base, '--quiet'], { env: { CENSO_API_KEY: 'chave' } });
    expect(run.stderr).toBe(
      `censo: o endereço ${base} não respondeu como um censo-api (HTTP 200 em /api/lotes, ${ANSWERS[kind].what}): ` +
        'confira --servidor (um proxy ou uma página de login no caminho?).\n',
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.stdout.length).toBe(0);
    expect(run.code).toBe(1);
  });
});
