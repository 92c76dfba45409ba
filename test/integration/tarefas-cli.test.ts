// `censo lote <pasta> --servidor <url>` (SPEC §7.5) against the service in embedded and queue
// mode: the same stdout, stderr and exit code as the local `censo lote` on the same folder, and a
// rerun that resumes (no file sent or run twice).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY } from '../helpers/http.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';

const CLI = fileURLToPath(new URL('../../cli/bin/censo.js', import.meta.url));
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function censo(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let redis: TestRedis;
let folder: string;
let work: string;
beforeAll(async () => {
  redis = await startTestRedis();
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-tarefas-cli-'));
  folder = path.join(work, 'retornos');
  await mkdir(path.join(folder, 'regional norte'), { recursive: true });
  await mkdir(path.join(folder, 'sul'), { recursive: true });
  await cp(basico.retorno.json, path.join(folder, 'regional norte', 'escola 1.json'));
  await cp(utf8.retorno.xlsx, path.join(folder, 'sul', 'Escola Açaí.xlsx'));
  await cp(basico.retorno.xlsx, path.join(folder, 'escola3.xlsx'));
  await writeFile(path.join(folder, 'quebrado.json'), '{"erros": [');
  await writeFile(path.join(folder, 'leia-me.txt'), 'not a return');
});
afterAll(async () => {
  await redis?.stop();
  await rm(work, { recursive: true, force: true });
});

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it.each(['csv', 'json'] as const)(
    '--format %s: the same output, errors and exit code as the local lote; a rerun sends nothing again',
    async (format) => {
      const local = await censo(['lote', folder, '--format', format]);
      expect(local.code).toBe(1);
      expect(local.stderr).toContain('censo: "quebrado.json": Arquivo retorno ilegível');

      const remote = await censo(['lote', folder, '--format', format, '--servidor', server.url], { CENSO_API_KEY: API_KEY });
      // The batch's id first (the one thing needed to find it again; the csv run made it, the json run
      // finds it), then the local lote's own lines.
      const [first, id] = /^Lote ([0-9a-f-]{36}): (?:criado|retomado \(4 de 4 arquivos já enviados\))\.\n/.exec(remote.stderr) ?? [];
      expect(id, remote.stderr).toBeDefined();
      expect(remote.stderr).toBe(`${first}${local.stderr}`);
      expect(remote.code).toBe(1);
      expect(remote.stdout).toBe(local.stdout);
      const jobs = server.gate.seen.length;

      const again = await censo(['lote', folder, '--format', format, '--servidor', `${server.url}/`, '--chave', API_KEY]);
      expect(again).toEqual({ ...remote, stderr: `Lote ${id}: retomado (4 de 4 arquivos já enviados).\n${local.stderr}` });
      expect(server.gate.seen.length).toBe(jobs);
    },
  );

  it('the folder went as one batch, found again by a key made of its files, each task with its path as referencia', async () => {
    const run = await censo(['lote', folder, '--servidor', server.url, '-o', path.join(work, `saida-${mode}.json`)], {
      CENSO_API_KEY: API_KEY,
    });
    expect(run.stdout).toBe('');
    const files = ['escola3.xlsx', 'quebrado.json', 'regional norte/escola 1.json', 'sul/Escola Açaí.xlsx'];
    const lines = await Promise.all(
      files.map(
        async (file) =>
          `${file}\0${createHash('sha256')
            .update(await readFile(path.join(folder, file)))
            .digest('hex')}\n`,
      ),
    );
    const key = `censo-lote-${createHash('sha256')
      .update(`retornos\n${lines.join('')}`)
      .digest('hex')}`;
    const lote = await request(server, 'POST', '/api/lotes', {
      body: JSON.stringify({ nome: 'retornos' }),
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
    });
    expect(lote.headers.get('idempotent-replayed')).toBe('true');
    expect(lote.json()).toMatchObject({ estado: 'concluido', tarefas: { total: 4, concluida: 3, falhou: 1 } });
    const tarefas = (await request(server, 'GET', `/api/lotes/${lote.json().id}/tarefas`)).json().tarefas as Array<{ referencia: string }>;
    expect(tarefas.map((t) => t.referencia).sort()).toEqual(files);
  });

  it('a run cut after some files resumes: the files already in the batch are not sent again', async () => {
    const partial = path.join(work, `parcial-${mode}`);
    await mkdir(partial, { recursive: true });
    await cp(basico.retorno.json, path.join(partial, 'a.json'));
    await cp(basico.retorno.xlsx, path.join(partial, 'b.xlsx'));
    // What a first run that died after its first file left: the batch, with a.json in it.
    const digest = async (file: string) =>
      createHash('sha256')
        .update(await readFile(path.join(partial, file)))
        .digest('hex');
    const lines = [`a.json\0${await digest('a.json')}\n`, `b.xlsx\0${await digest('b.xlsx')}\n`];
    const key = `censo-lote-${createHash('sha256')
      .update(`${path.basename(partial)}\n${lines.join('')}`)
      .digest('hex')}`;
    const lote = (
      await request(server, 'POST', '/api/lotes', {
        body: JSON.stringify({ nome: path.basename(partial) }),
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
      })
    ).json().id as string;
    const form = new FormData();
    form.append('referencia', 'a.json');
    form.append('retorno', new Blob([await readFile(path.join(partial, 'a.json'))]), 'a.json');
    const first = await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: form });
    expect(first.status).toBe(202);
    await waitForTarefa(server, first.json().id as string);
    const jobs = server.gate.seen.length;

    const resumed = await censo(['lote', partial, '--servidor', server.url], { CENSO_API_KEY: API_KEY });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toBe((await censo(['lote', partial])).stdout);
    // One job more (b.xlsx), and the batch holds the two files once each.
    expect(server.gate.seen.length).toBe(jobs + 1);
    expect((await request(server, 'GET', `/api/lotes/${lote}`)).json()).toMatchObject({
      estado: 'concluido',
      tarefas: { total: 2, concluida: 2 },
    });
  });

  it('-o on a full disk: one line, exit 1, the batch left open; the rerun finishes it without sending a file twice', async () => {
    const pasta = path.join(work, `cheio-${mode}`);
    await mkdir(pasta, { recursive: true });
    for (let i = 0; i < 12; i++) await cp(basico.retorno.json, path.join(pasta, `escola-${String(i).padStart(2, '0')}.json`));
    const jobs = server.gate.seen.length;
    const full = await censo(['lote', pasta, '--servidor', server.url, '-o', '/dev/full'], { CENSO_API_KEY: API_KEY });
    expect(full.code).toBe(1);
    expect(full.stderr).toMatch(/^Lote [0-9a-f-]{36}: criado\.\ncenso: Não foi possível gravar em "\/dev\/full": disco cheio\.\n$/);

    const out = path.join(work, `cheio-${mode}.csv`);
    const rerun = await censo(['--quiet', 'lote', pasta, '--servidor', server.url, '-o', out], { CENSO_API_KEY: API_KEY });
    expect(rerun.stderr).toBe('');
    expect(rerun.code).toBe(0);
    expect(await readFile(out, 'utf8')).toBe((await censo(['lote', pasta, '--format', 'csv'])).stdout);
    // The rerun sent only what the first run had not: twelve jobs in all, each file once.
    expect(server.gate.seen.length - jobs).toBe(12);
  });

  it('a wrong key stops with the service message and where the key comes from (exit 1); no key is wrong usage (exit 2)', async () => {
    const wrong = await censo(['lote', folder, '--servidor', server.url, '--chave', 'errada']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe('censo: Credencial inválida (header x-api-key): confira CENSO_API_KEY ou --chave (HTTP 401).\n');
    const none = await censo(['lote', folder, '--servidor', server.url]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('censo: informe a chave da API em CENSO_API_KEY ou com --chave.\n');
    const noServer = await censo(['lote', folder, '--chave', API_KEY]);
    expect(noServer.code).toBe(2);
  });
});

it('a server that does not answer is a one-line error saying what to check, exit 1', async () => {
  // A port that was free a moment ago: nothing listens there.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const run = await censo(['lote', folder, '--servidor', `http://127.0.0.1:${port}`], { CENSO_API_KEY: API_KEY });
  expect(run.code).toBe(1);
  expect(run.stderr).toBe(
    `censo: não foi possível falar com o servidor http://127.0.0.1:${port}: conexão recusada (o serviço está no ar? confira o endereço e a porta em --servidor).\n`,
  );
});
