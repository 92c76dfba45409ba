// `censo lote --servidor` trusts no batch it did not make (issue 33), in embedded and queue mode.
// The finding: a colleague who holds the same folder computes the batch's deterministic
// Idempotency-Key, creates the batch first with a forged task for one file, and the CLI adopted
// it, skipped that file and printed the forged rows as the folder's. Another principal can no
// longer do that (the key is the principal's own); the same principal still can, so the CLI
// checks every task it adopts against the local file's SHA-256 (the monitor's `arquivos`). Beside
// it: the batch's id on stderr, --novo-lote, `censo lotes` (list, --apagar) and a batch whose
// files all failed, which must never look like a finished result.
import { createHash } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY } from '../helpers/http.js';
import { signInEnv, startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/ports.js';
import { signIn, TestBrowser } from '../helpers/oidc-browser.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { censo as run, type Run } from './censo-process.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;
const redis = useTestRedis();
const ID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const censo = (args: readonly string[], env: Record<string, string> = { CENSO_API_KEY: API_KEY }): Promise<Run> => run(args, { env });
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** The batch key `lote --servidor` derives from a folder: its name, every return's path and SHA-256. */
async function folderKey(folder: string, names: readonly string[]): Promise<string> {
  const lines = await Promise.all(names.map(async (name) => `${name}\0${sha256(await readFile(path.join(folder, name)))}\n`));
  return `censo-lote-${sha256(`${path.basename(folder)}\n${lines.join('')}`)}`;
}

/** The Idempotency-Key `lote --servidor` sends a file with: its SHA-256, and its path's. */
const fileKey = async (folder: string, name: string) => `${sha256(await readFile(path.join(folder, name)))}-${sha256(name)}`;

/** A caller of the API: the integration's key, or a person's signed-in browser (with its CSRF token). */
type Call = (method: string, route: string, init?: { body?: FormData | string; headers?: Record<string, string> }) => Promise<Response>;

async function person(server: Harness, login: string): Promise<Call> {
  const browser = new TestBrowser();
  await signIn(browser, server.url, login);
  const sessao = await browser.fetch(`${server.url}/auth/sessao`);
  expect(sessao.status).toBe(200);
  const csrf = sessao.headers.get('x-csrf-token')!;
  return async (method, route, init = {}) => {
    const visit = await browser.fetch(`${server.url}${route}`, {
      method,
      headers: { 'x-csrf-token': csrf, ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
    return new Response(visit.body, { status: visit.status, headers: visit.headers });
  };
}

function integration(server: Harness): Call {
  return (method, route, init = {}) =>
    fetch(`${server.url}${route}`, { method, ...init, headers: { 'x-api-key': API_KEY, ...init.headers } });
}

/** What a forger does: the folder's batch under its key, then `name` with other bytes under the CLI's own key for it. */
async function forge(
  call: Call,
  folder: string,
  names: readonly string[],
  name: string,
  bytes: Buffer,
): Promise<{ lote: string; tarefa: string }> {
  const created = await call('POST', '/api/lotes', {
    body: JSON.stringify({ nome: path.basename(folder) }),
    headers: { 'content-type': 'application/json', 'idempotency-key': await folderKey(folder, names) },
  });
  expect(created.status).toBe(201);
  const lote = ((await created.json()) as { id: string }).id;
  const form = new FormData();
  form.append('referencia', name);
  form.append('retorno', new Blob([bytes]), name);
  const sent = await call('POST', `/api/lotes/${lote}/divergencias-rf`, {
    body: form,
    headers: { 'idempotency-key': await fileKey(folder, name) },
  });
  expect(sent.status).toBe(202);
  return { lote, tarefa: ((await sent.json()) as { id: string }).id };
}

/** The id of the CLI's batch for `folder` once it has sent every file and closed it (bounded wait). */
async function closedBatch(server: Harness, folder: string): Promise<string> {
  type Listed = { id: string; nome: string; fechado_em: string | null };
  for (let waited = 0; ; waited++) {
    expect(waited, 'the CLI never closed its batch').toBeLessThan(400);
    await sleep(25);
    const [newest] = (await request(server, 'GET', '/api/lotes?limit=1')).json().lotes as Listed[];
    if (newest?.nome === path.basename(folder) && newest.fechado_em !== null) return newest.id;
  }
}

let provider: TestProvider;
let work: string;
const ports: Partial<Record<Mode, number>> = {};
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-lote-servidor-'));
  for (const mode of MODES) ports[mode] = await freePort();
  provider = await startTestProvider(
    MODES.map((mode) => `http://127.0.0.1:${ports[mode]}`),
    { ana: { name: 'Ana Lima', email: 'ana@seduc.example', groups: ['censo-retorno'] } },
  );
});
afterAll(async () => {
  await provider?.close();
  await rm(work, { recursive: true, force: true });
});

let serial = 0;
/** A new folder with a.json (basico) and b.xlsx (basico-utf8): the names, sorted as the CLI sorts them. */
async function schools(): Promise<{ folder: string; names: string[] }> {
  const folder = path.join(work, `escolas-${++serial}`);
  await mkdir(folder, { recursive: true });
  await cp(basico.retorno.json, path.join(folder, 'a.json'));
  await cp(utf8.retorno.xlsx, path.join(folder, 'b.xlsx'));
  return { folder, names: ['a.json', 'b.xlsx'] };
}

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, {
      redisUrl: redis.url,
      port: ports[mode]!,
      // Room for the batches the listing test opens to make the CLI read two pages.
      env: { ...signInEnv(provider, `http://127.0.0.1:${ports[mode]}`), MAX_LOTES_ABERTOS: '400' },
    });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it("another principal's batch under the folder's key is not found by the CLI: it creates its own and writes the folder's rows", async () => {
    const { folder, names } = await schools();
    const forged = await forge(await person(server, 'ana'), folder, names, 'a.json', await readFile(utf8.retorno.json));
    const local = await censo(['lote', folder, '--format', 'csv'], {});
    const remote = await censo(['lote', folder, '--format', 'csv', '--servidor', server.url]);
    expect(remote.code).toBe(0);
    const id = new RegExp(`^Lote (${ID}): criado\\.\\n`).exec(remote.stderr)?.[1];
    expect(id, remote.stderr).toBeDefined();
    expect(id).not.toBe(forged.lote);
    expect(remote.stdout.toString()).toBe(local.stdout.toString());
  });

  it('its own batch holding a task with other bytes for one of the files is refused: exit 1, nothing written or sent; --novo-lote sends a new batch', async () => {
    const { folder, names } = await schools();
    // The same principal (the integration's key) forges: b.xlsx's task in fact holds basico's JSON.
    const forged = await forge(integration(server), folder, names, 'b.xlsx', await readFile(basico.retorno.json));
    await waitForTarefa(server, forged.tarefa);
    const jobs = server.gate.seen.length;
    const out = path.join(work, `recusado-${mode}.csv`);
    const refused = await censo(['lote', folder, '-o', out, '--servidor', server.url]);
    expect(refused.stderr).toBe(
      `censo: o lote ${forged.lote} já tem uma tarefa para "b.xlsx", mas ela tem outro arquivo, não o desta pasta: o lote não foi usado. ` +
        'Rode de novo com --novo-lote para enviar a pasta num lote novo.\n',
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout.length).toBe(0);
    await expect(readFile(out), 'an -o written from a forged batch').rejects.toThrow(/ENOENT/);
    // a.json was not sent into the forged batch either.
    expect(server.gate.seen.length).toBe(jobs);
    expect((await request(server, 'GET', `/api/lotes/${forged.lote}`)).json()).toMatchObject({ tarefas: { total: 1 } });

    const fresh = await censo(['lote', folder, '-o', out, '--servidor', server.url, '--novo-lote']);
    expect(fresh.code).toBe(0);
    const id = new RegExp(`^Lote (${ID}): criado\\.\\n`).exec(fresh.stderr)?.[1];
    expect(id, fresh.stderr).toBeDefined();
    expect(id).not.toBe(forged.lote);
    expect(await readFile(out, 'utf8')).toBe((await censo(['lote', folder, '--format', 'csv'], {})).stdout.toString());
    expect((await request(server, 'GET', `/api/lotes/${id}`)).json()).toMatchObject({ estado: 'concluido', tarefas: { total: 2 } });
  });

  it('says which batch it uses on stderr (not a terminal here): created, then resumed by the rerun; --quiet leaves it out', async () => {
    const { folder } = await schools();
    const first = await censo(['lote', folder, '--servidor', server.url]);
    expect(first.code).toBe(0);
    const id = new RegExp(`^Lote (${ID}): criado\\.\\n`).exec(first.stderr)?.[1];
    expect(id, first.stderr).toBeDefined();
    const again = await censo(['lote', folder, '--servidor', server.url]);
    expect(again.stderr.split('\n')[0]).toBe(`Lote ${id}: retomado (2 de 2 arquivos já enviados).`);
    expect(again.stdout).toEqual(first.stdout);
    const quiet = await censo(['--quiet', 'lote', folder, '--servidor', server.url]);
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
  });

  it('censo lotes lists every batch of the caller, newest first, across pages; --format json gives their monitors', async () => {
    const { folder } = await schools();
    const mine = await censo(['lote', folder, '--servidor', server.url]);
    const id = new RegExp(`^Lote (${ID}): criado`).exec(mine.stderr)![1]!;
    // More batches than one of the CLI's pages (100), so a list that stops at the first page is short.
    for (let i = 0; i < 105; i++) {
      const created = await request(server, 'POST', '/api/lotes', {
        body: JSON.stringify({ nome: `vazio ${i}` }),
        headers: { 'content-type': 'application/json' },
      });
      expect(created.status).toBe(201);
    }
    const all = (await request(server, 'GET', '/api/lotes?limit=1000')).json().lotes as Array<{
      id: string;
      nome: string;
      criado_em: string;
    }>;
    expect(all.length).toBeGreaterThan(105);

    const json = await censo(['lotes', '--servidor', server.url, '--format', 'json']);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const listed = (JSON.parse(json.stdout.toString()) as { lotes: Array<{ id: string; nome: string; estado: string }> }).lotes;
    expect(listed.map((lote) => lote.id)).toEqual(all.map((lote) => lote.id));
    // Newest first: the last batch made heads the list, with any made in the same millisecond
    // (those tie, in id order; a CI run once had 103 and 104 in one millisecond).
    expect(listed.filter((lote, i) => i === 0 || all[i]!.criado_em === all[0]!.criado_em).map((lote) => lote.nome)).toContain('vazio 104');

    const text = await censo(['lotes', '--servidor', server.url, '--chave', API_KEY], {});
    expect(text.code).toBe(0);
    const lines = text.stdout.toString().split('\n');
    expect(lines[0]).toMatch(/^id +estado +criado_em +tarefas +concluidas +falhas +nome$/);
    expect(lines).toHaveLength(all.length + 2);
    expect(lines.find((line) => line.startsWith(id))).toMatch(new RegExp(`^${id} +concluido +\\S+ +2 +2 +0 +${path.basename(folder)}$`));
    // The same order as the JSON; its head is the newest batch (same-millisecond ties checked above).
    expect(lines.slice(1, -1).map((line) => line.split(' ')[0])).toEqual(all.map((lote) => lote.id));
    expect(lines[1]).toMatch(new RegExp(` aberto +\\S+ +0 +0 +0 +${all[0]!.nome}$`));
  });

  it('censo lotes --apagar deletes a batch and its data; an id it does not have: exit 1, "Lote não encontrado."', async () => {
    const { folder } = await schools();
    const sent = await censo(['lote', folder, '--servidor', server.url]);
    const id = new RegExp(`^Lote (${ID}): criado`).exec(sent.stderr)![1]!;
    const tarefas = (await request(server, 'GET', `/api/lotes/${id}/tarefas`)).json().tarefas as Array<{ id: string }>;
    expect(tarefas).toHaveLength(2);

    const deleted = await censo(['lotes', '--servidor', server.url, '--apagar', id]);
    expect(deleted).toMatchObject({ code: 0, stderr: `Lote ${id} apagado.\n` });
    expect(deleted.stdout.length).toBe(0);
    expect((await request(server, 'GET', `/api/lotes/${id}`)).status).toBe(404);
    for (const tarefa of tarefas) expect((await request(server, 'GET', `/api/tarefas/${tarefa.id}/resultado`)).status).toBe(404);

    for (const gone of [id, '00000000-0000-4000-8000-000000000000']) {
      const again = await censo(['lotes', '--servidor', server.url, '--apagar', gone]);
      expect(again).toMatchObject({ code: 1, stderr: 'censo: Lote não encontrado.\n' });
    }
  });

  it('an earlier result kept among the returns is never sent: the batch holds the returns only, the summary names it', async () => {
    const { folder } = await schools();
    const local = await censo(['lote', folder, '--format', 'json'], {});
    await writeFile(path.join(folder, 'divergencias.json'), local.stdout);
    const sent = await censo(['lote', folder, '--format', 'json', '--servidor', server.url]);
    expect(sent.code).toBe(0);
    expect(sent.stdout.toString()).toBe(local.stdout.toString());
    const [, id] = new RegExp(`^Lote (${ID}): criado\\.\\n`).exec(sent.stderr) ?? [];
    expect(id, sent.stderr).toBeDefined();
    expect(sent.stderr).toMatch(/; ignorados: 1; .*\nIgnorados: "divergencias\.json" \(resultado anterior do censo lote\)\.\n$/);
    const tarefas = (await request(server, 'GET', `/api/lotes/${id}/tarefas`)).json().tarefas as Array<{ referencia: string }>;
    expect(tarefas.map((t) => t.referencia).sort()).toEqual(['a.json', 'b.xlsx']);
  });

  it('Ctrl-C while the batch runs: one line says -o was not written and the batch waits on the server; the rerun resumes it', async () => {
    const { folder } = await schools();
    const out = path.join(work, `interrompido-${mode}.csv`);
    server.gate.close();
    try {
      let child: ChildProcess | undefined;
      const running = run(['lote', folder, '-o', out, '--servidor', server.url], {
        env: { CENSO_API_KEY: API_KEY },
        started: (started) => (child = started),
      });
      const lote = await closedBatch(server, folder);
      child!.kill('SIGINT');
      const stopped = await running;
      expect(stopped.signal).toBe('SIGINT');
      expect(stopped.stderr).toBe(
        `Lote ${lote}: criado.\ncenso: interrompido; "${out}" não foi gravado; ` +
          `o lote ${lote} continua no servidor: rode o mesmo comando para retomá-lo.\n`,
      );
      await expect(readFile(out)).rejects.toThrow(/ENOENT/);
    } finally {
      server.gate.open();
    }
    const resumed = await censo(['lote', folder, '-o', out, '--servidor', server.url]);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr.split('\n')[0]).toMatch(/: retomado \(2 de 2 arquivos já enviados\)\.$/);
    expect(await readFile(out, 'utf8')).toBe((await censo(['lote', folder, '--format', 'csv'], {})).stdout.toString());
  });

  it('a batch deleted while the CLI waits for it: every file is named as failed in the summary, exit 1, no row written', async () => {
    const { folder } = await schools();
    server.gate.close();
    try {
      const running = censo(['lote', folder, '--format', 'csv', '--servidor', server.url]);
      // Bounded wait for the CLI to have sent both files and closed its batch (the jobs are held at the gate).
      const lote = await closedBatch(server, folder);
      expect((await request(server, 'DELETE', `/api/lotes/${lote}`)).status).toBe(204);
      server.gate.open();
      const done = await running;
      expect(done.code).toBe(1);
      expect(done.stdout.toString()).toBe('arquivo,codigo_na_escola,linha,campo,enviado,correto,is_filiacao,chave,correcao\r\n');
      expect(done.stderr).toMatch(/^censo: "a\.json": .+\ncenso: "b\.xlsx": .+\n/m);
      expect(done.stderr).toMatch(
        /\nRetornos: 2 \(0 lidos, 2 com falha\); ignorados: 0; divergências gravadas: 0\.\nCom falha: "a\.json", "b\.xlsx"\.\n$/,
      );
    } finally {
      server.gate.open();
    }
  });
});

describe('priority', () => {
  it('a folder sent to the service is batch work: the command runs at niceness 10 (Linux), or at its own if that is lower', async () => {
    const { folder } = await schools();
    // A server that takes the first request and never answers: the command waits, and is looked at meanwhile.
    const server = http.createServer();
    const first = once(server, 'request') as Promise<[http.IncomingMessage, http.ServerResponse]>;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    let child: ChildProcess | undefined;
    try {
      const running = run(['lote', folder, '--servidor', `http://127.0.0.1:${port}`], {
        env: { CENSO_API_KEY: API_KEY },
        started: (c) => (child = c),
      });
      // The command's first request, or its end if it never makes one (then the test fails here, not at its timeout).
      const [, res] = await Promise.race([first, running.then((r) => Promise.reject(new Error(`censo ended first: ${r.stderr}`)))]);
      expect(niceOf(child!.pid!)).toBe(Math.max(10, niceOf(process.pid)));
      child!.kill('SIGKILL');
      await running;
      res.destroy();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

/** The nice value of a process's main thread (field 19 of /proc/<pid>/stat). */
function niceOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[16]);
}
