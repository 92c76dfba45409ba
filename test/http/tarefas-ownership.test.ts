// SPEC §7.1–§7.3 trust between callers, in embedded and queue mode: tasks, batches and
// Idempotency-Keys belong to the principal that created them — the integration (every API_KEY
// value) or one person signed in through a real OpenID provider. Another principal gets exactly
// what an unknown id gets, and its own key space: it can neither read, delete, replay nor squat.
// Beside them, the limits that keep one caller from filling the service: MAX_LOTES_ABERTOS,
// LOTE_MAX_HOURS and MAX_QUEUED_TAREFAS with uploads that arrive together.
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith, type UploadFile } from '../helpers/http.js';
import { signInEnv, startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/ports.js';
import { TestBrowser, signIn } from '../helpers/oidc-browser.js';
import { BOUNDARY, closing, openUpload, partHead } from '../helpers/raw-http.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const fileA: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'escola-a.json' };
// Another return (an empty one is readable: SPEC §1.2), so another request under the same key.
const fileB: UploadFile = { field: 'retorno', content: '{"erros": []}', filename: 'escola-b.json' };
const TAREFA_404 = { erro: 'Tarefa não encontrada.' };
const LOTE_404 = { erro: 'Lote não encontrado.' };

const ACCOUNTS = {
  ana: { name: 'Ana Lima', email: 'ana@seduc.example', groups: ['censo-retorno'] },
  caio: { name: 'Caio Dias', email: 'caio@seduc.example', groups: ['censo-retorno'] },
};

const redis = useTestRedis();

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  json(): Record<string, unknown>;
}

/** One principal as a client: the integration's key, or a person's browser session (with its CSRF token). */
interface Caller {
  readonly name: string;
  call(method: string, route: string, init?: { body?: FormData | string; headers?: Record<string, string> }): Promise<Reply>;
}

const reply = (status: number, headers: Headers, text: string): Reply => ({ status, headers, text, json: () => JSON.parse(text) });

function integration(server: Harness, key = API_KEY): Caller {
  return {
    name: 'integração',
    async call(method, route, init = {}) {
      const answer = await request(server, method, route, { ...init, headers: { 'x-api-key': key, ...init.headers } });
      return reply(answer.status, answer.headers, answer.bytes.toString('utf8'));
    },
  };
}

async function person(server: Harness, login: string): Promise<Caller> {
  const browser = new TestBrowser();
  await signIn(browser, server.url, login);
  const sessao = await browser.fetch(`${server.url}/auth/sessao`);
  expect(sessao.status).toBe(200);
  const csrf = sessao.headers.get('x-csrf-token')!;
  return {
    name: login,
    async call(method, route, init = {}) {
      const headers = { ...(method === 'GET' ? {} : { 'x-csrf-token': csrf }), ...init.headers };
      const visit = await browser.fetch(`${server.url}${route}`, {
        method,
        headers,
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      return reply(visit.status, visit.headers, visit.body);
    },
  };
}

async function postTask(caller: Caller, file: UploadFile, headers: Record<string, string> = {}): Promise<Reply> {
  return caller.call('POST', '/api/divergencias-rf', { body: await formWith([file]), headers: { prefer: 'respond-async', ...headers } });
}

async function createLote(caller: Caller, body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Reply> {
  return caller.call('POST', '/api/lotes', { body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
}

const sha256 = async (path: string) =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex');

let provider: TestProvider;
const ports: Partial<Record<Mode, number>> = {};

beforeAll(async () => {
  for (const mode of MODES) ports[mode] = await freePort();
  provider = await startTestProvider(
    MODES.map((mode) => `http://127.0.0.1:${ports[mode]}`),
    ACCOUNTS,
  );
});

afterAll(async () => {
  await provider?.close();
});

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  let api: Caller;
  let ana: Caller;
  let caio: Caller;

  beforeAll(async () => {
    const publicUrl = `http://127.0.0.1:${ports[mode]}`;
    server = await startHarness(mode, {
      redisUrl: redis.url,
      port: ports[mode]!,
      env: { ...signInEnv(provider, publicUrl), API_KEY: `${API_KEY},chave-nova` },
    });
    api = integration(server);
    ana = await person(server, 'ana');
    caio = await person(server, 'caio');
  });
  afterAll(async () => {
    await server?.dispose();
  });

  describe('tasks', () => {
    it("another principal's task is an unknown id to it: monitor, result and DELETE answer the same 404", async () => {
      const unknown = randomUUID();
      for (const [owner, others] of [
        [() => api, () => [ana, caio]],
        [() => ana, () => [caio, api]],
      ] as const) {
        const created = await postTask(owner(), fileA);
        expect(created.status).toBe(202);
        const id = created.json().id as string;
        await waitForTarefa({ url: server.url }, id).catch(() => undefined);
        for (const other of others()) {
          for (const [method, route] of [
            ['GET', `/api/tarefas/${id}`],
            ['GET', `/api/tarefas/${id}/resultado`],
            ['GET', `/api/tarefas/${id}/resultado?format=csv`],
            ['DELETE', `/api/tarefas/${id}`],
          ] as const) {
            const theirs = await other.call(method, route);
            const nobodys = await other.call(method, route.replace(id, unknown));
            expect([other.name, method, route, theirs.status, theirs.json()]).toEqual([other.name, method, route, 404, TAREFA_404]);
            expect(theirs.text).toBe(nobodys.text);
          }
        }
        // Still there for its owner, whatever the others tried.
        const mine = await owner().call('GET', `/api/tarefas/${id}`);
        expect(mine.status).toBe(200);
        await waitFor(async () => (await owner().call('GET', `/api/tarefas/${id}`)).json().estado === 'concluida', {
          what: 'the task to end',
        });
        expect((await owner().call('GET', `/api/tarefas/${id}/resultado`)).status).toBe(200);
      }
    });

    it('every value of API_KEY is the same principal (rotation), and the monitor lists the files with their SHA-256', async () => {
      const created = await postTask(api, fileA);
      const id = created.json().id as string;
      const rotated = integration(server, 'chave-nova');
      const seen = await rotated.call('GET', `/api/tarefas/${id}`);
      expect(seen.status).toBe(200);
      expect(seen.json().arquivos).toEqual([
        { campo: 'retorno', nome: 'escola-a.json', bytes: (await readFile(fileA.path!)).length, sha256: await sha256(fileA.path!) },
      ]);
    });
  });

  describe('Idempotency-Key: each principal has its own space', () => {
    it("the same key and file from another principal is another task, never the first one's (no replay, no oracle)", async () => {
      const key = `chave-${randomUUID()}`;
      const first = await postTask(api, fileA, { 'idempotency-key': key });
      expect(first.status).toBe(202);
      const theirs = await postTask(ana, fileA, { 'idempotency-key': key });
      expect(theirs.status).toBe(202);
      expect(theirs.headers.get('idempotent-replayed')).toBeNull();
      expect(theirs.json().id).not.toBe(first.json().id);
      // Each principal's own replay is still a replay.
      const again = await postTask(api, fileA, { 'idempotency-key': key });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.json().id).toBe(first.json().id);
      const anaAgain = await postTask(ana, fileA, { 'idempotency-key': key });
      expect(anaAgain.json().id).toBe(theirs.json().id);
    });

    it("a key squatted by another principal with another file does not make the owner's request a 422", async () => {
      const key = `squat-${randomUUID()}`;
      const squat = await postTask(caio, fileB, { 'idempotency-key': key });
      expect(squat.status).toBe(202);
      const real = await postTask(api, fileA, { 'idempotency-key': key });
      expect(real.status).toBe(202);
      expect(real.headers.get('idempotent-replayed')).toBeNull();
      // Within one principal the rule of SPEC §7.2 holds: another request with the key is a 422.
      const other = await postTask(api, fileB, { 'idempotency-key': key });
      expect(other.status).toBe(422);
      expect(other.json()).toEqual({ erro: 'Idempotency-Key já usada com outra requisição.' });
    });
  });

  describe('batches', () => {
    it("another principal's batch is an unknown id to it on every route, and is not in its list", async () => {
      const lote = (await createLote(api, { nome: 'da integração' })).json().id as string;
      const unknown = randomUUID();
      const form = async () => formWith([fileA]);
      const routes: Array<[string, string, () => Promise<FormData | undefined>]> = [
        ['GET', `/api/lotes/${lote}`, async () => undefined],
        ['GET', `/api/lotes/${lote}/tarefas`, async () => undefined],
        ['GET', `/api/lotes/${lote}/divergencias?parcial=true`, async () => undefined],
        ['GET', `/api/lotes/${lote}/falhas?parcial=true`, async () => undefined],
        ['GET', `/api/lotes/${lote}/resumo?parcial=true`, async () => undefined],
        ['GET', `/api/lotes/${lote}/cartas?parcial=true`, async () => undefined],
        ['GET', `/api/lotes/${lote}/corrigidos?parcial=true`, async () => undefined],
        ['GET', `/api/lotes/${lote}/comparacao?anterior=${randomUUID()}`, async () => undefined],
        ['POST', `/api/lotes/${lote}/divergencias-rf`, form],
        ['POST', `/api/lotes/${lote}/fechar`, async () => undefined],
        ['DELETE', `/api/lotes/${lote}`, async () => undefined],
      ];
      for (const [method, route, body] of routes) {
        const payload = await body();
        const theirs = await ana.call(method, route, payload ? { body: payload } : {});
        const nobodys = await ana.call(method, route.replace(lote, unknown), payload ? { body: await body() } : {});
        expect([method, route, theirs.status, theirs.json()]).toEqual([method, route, 404, LOTE_404]);
        expect(theirs.text).toBe(nobodys.text);
      }
      // Comparing one's own batch with another's earlier round: that round is not found either.
      const own = (await createLote(ana)).json().id as string;
      await ana.call('POST', `/api/lotes/${own}/fechar`);
      const across = await ana.call('GET', `/api/lotes/${own}/comparacao?anterior=${lote}`);
      expect([across.status, across.json()]).toEqual([404, LOTE_404]);
      const listed = async (caller: Caller) =>
        ((await caller.call('GET', '/api/lotes')).json().lotes as Array<{ id: string }>).map((l) => l.id);
      expect(await listed(ana)).not.toContain(lote);
      expect(await listed(api)).toContain(lote);
      // Untouched: still open, and the integration can still send to it.
      const monitor = (await api.call('GET', `/api/lotes/${lote}`)).json();
      expect(monitor.estado).toBe('aberto');
      expect((await api.call('POST', `/api/lotes/${lote}/divergencias-rf`, { body: await form() })).status).toBe(202);
    });

    it("a batch creation replayed by another principal is a batch of its own: never the first one's id or webhook_segredo", async () => {
      const key = `lote-${randomUUID()}`;
      const body = { nome: 'rodada 1', webhook: 'http://127.0.0.1:9/ganchos' };
      const first = await createLote(api, body, { 'idempotency-key': key });
      expect(first.status).toBe(201);
      const replay = await createLote(api, body, { 'idempotency-key': key });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.json()).toMatchObject({ id: first.json().id, webhook_segredo: first.json().webhook_segredo });
      const theirs = await createLote(ana, body, { 'idempotency-key': key });
      expect(theirs.status).toBe(201);
      expect(theirs.headers.get('idempotent-replayed')).toBeNull();
      expect(theirs.json().id).not.toBe(first.json().id);
      expect(theirs.json().webhook_segredo).not.toBe(first.json().webhook_segredo);
    });

    it('GET /api/lotes pages through the caller’s own batches, newest first, with an opaque cursor', async () => {
      const browser = await person(server, 'caio');
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        made.push((await createLote(browser, { nome: `página ${i}` })).json().id as string);
        // "Newest" is the creation millisecond: two batches of the same one have no order between them.
        await sleep(2);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const page: Reply = await browser.call('GET', `/api/lotes?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        const body = page.json() as {
          lotes: Array<{ id: string; nome: string; tarefas: Record<string, number> }>;
          next_cursor: string | null;
        };
        expect(body.lotes.length).toBeLessThanOrEqual(2);
        seen.push(...body.lotes.map((l) => l.id));
        cursor = body.next_cursor;
        if (cursor === null) break;
      }
      // Caio's own batches only (the squat test's tasks are not batches), newest first.
      expect(seen.slice(0, 5)).toEqual([...made].reverse());
      expect(new Set(seen).size).toBe(seen.length);
      for (const bad of ['%%%', 'bm9wZQ', Buffer.from(`-1:${randomUUID()}x`).toString('base64url')]) {
        const refused = await browser.call('GET', `/api/lotes?cursor=${bad}`);
        expect(refused.status).toBe(400);
        expect(refused.json()).toEqual({ erro: 'Parâmetro cursor inválido.' });
      }
      expect((await browser.call('GET', '/api/lotes?limit=1001')).json()).toEqual({
        erro: 'Parâmetro limit deve ser um número inteiro de 1 a 1000.',
      });
    });
  });
});

describe.each(MODES)('%s mode: limits per principal and per replica', (mode: Mode) => {
  it('MAX_LOTES_ABERTOS open batches per principal, then 429 Muitos lotes abertos.; closing or deleting one frees its place', async () => {
    const server = await startHarness(mode, { redisUrl: redis.url, env: { MAX_LOTES_ABERTOS: '3' } });
    try {
      const api = integration(server);
      // Created together: the bound holds exactly, not only one request at a time.
      const created = await Promise.all(Array.from({ length: 6 }, () => createLote(api)));
      expect(created.filter((r) => r.status === 201)).toHaveLength(3);
      const refused = created.filter((r) => r.status !== 201);
      for (const r of refused) {
        expect(r.status).toBe(429);
        expect(r.json()).toEqual({ erro: 'Muitos lotes abertos.' });
      }
      const [one, two] = created.filter((r) => r.status === 201).map((r) => r.json().id as string);
      await api.call('POST', `/api/lotes/${one}/fechar`);
      expect((await createLote(api)).status).toBe(201);
      expect((await createLote(api)).status).toBe(429);
      expect((await api.call('DELETE', `/api/lotes/${two}`)).status).toBe(204);
      expect((await createLote(api)).status).toBe(201);
    } finally {
      await server.dispose();
    }
  });

  it('LOTE_MAX_HOURS after its creation a batch closes itself, even while files keep coming', async () => {
    // 0.0005 h = 1.8 s; the 24 h idle close cannot be what closes it.
    const server = await startHarness(mode, { redisUrl: redis.url, env: { LOTE_MAX_HOURS: '0.0005' } });
    try {
      const api = integration(server);
      const lote = (await createLote(api)).json().id as string;
      let closed: Record<string, unknown> = {};
      // A file every 300 ms until the batch refuses one (bounded: 40 tries, 12 s).
      for (let i = 0; i < 40; i++) {
        const sent = await api.call('POST', `/api/lotes/${lote}/divergencias-rf`, { body: await formWith([fileA]) });
        if (sent.status === 409) {
          expect(sent.json()).toEqual({ erro: 'Lote fechado.' });
          closed = (await api.call('GET', `/api/lotes/${lote}`)).json();
          break;
        }
        expect(sent.status).toBe(202);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(closed.fechado_em).toEqual(expect.any(String));
      const age = Date.parse(closed.fechado_em as string) - Date.parse(closed.criado_em as string);
      expect(age).toBeGreaterThanOrEqual(1_000);
      await waitFor(async () => (await api.call('GET', `/api/lotes/${lote}`)).json().estado === 'concluido', { what: 'the batch to end' });
    } finally {
      await server.dispose();
    }
  });

  it('MAX_QUEUED_TAREFAS holds for uploads that arrive together: of six held open against a limit of two, four are refused before their bodies', async () => {
    const server = await startHarness(mode, { redisUrl: redis.url, env: { MAX_QUEUED_TAREFAS: '2' } });
    server.gate.close();
    try {
      const content = await readFile(fileA.path!);
      const uploads = Array.from({ length: 6 }, () =>
        openUpload(server.url, '/api/divergencias-rf', {
          'x-api-key': API_KEY,
          prefer: 'respond-async',
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        }),
      );
      // Every head has reached the service and half of every body: none of them is a task yet.
      await Promise.all(
        uploads.map((upload) => upload.write(Buffer.concat([partHead('retorno', 'escola.json'), content.subarray(0, 100)]))),
      );
      const early = await Promise.all(
        uploads.map((upload) => Promise.race([upload.response, new Promise<null>((resolve) => setTimeout(() => resolve(null), 1_500))])),
      );
      const refused = early.filter((answer) => answer !== null);
      expect(refused.map((answer) => [answer!.status, answer!.body])).toEqual(
        Array.from({ length: 4 }, () => [503, { erro: 'Serviço sobrecarregado, tente novamente em instantes.' }]),
      );
      const admitted = uploads.filter((_, i) => early[i] === null);
      const answers = await Promise.all(admitted.map((upload) => upload.finish(Buffer.concat([content.subarray(100), closing()]))));
      expect(answers.map((answer) => answer.status)).toEqual([202, 202]);
    } finally {
      server.gate.open();
      await server.dispose();
    }
  });

  it('answers that carry personal data are never cached: Cache-Control: no-store, synchronous or not, every format', async () => {
    const server = await startHarness(mode, { redisUrl: redis.url });
    try {
      const api = integration(server);
      for (const format of ['json', 'csv', 'xlsx']) {
        const sync = await api.call('POST', `/api/divergencias-rf?format=${format}`, { body: await formWith([fileA]) });
        expect([format, sync.status, sync.headers.get('cache-control')]).toEqual([format, 200, 'no-store']);
      }
      const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'censo.txt' };
      const corrigido = await api.call('POST', '/api/censo-corrigido', { body: await formWith([fileA, txt]) });
      expect(corrigido.headers.get('cache-control')).toBe('no-store');
      const id = (await postTask(api, fileA)).json().id as string;
      await waitForTarefa({ url: server.url }, id);
      for (const format of ['json', 'csv', 'xlsx']) {
        const result = await api.call('GET', `/api/tarefas/${id}/resultado?format=${format}`);
        expect([format, result.status, result.headers.get('cache-control')]).toEqual([format, 200, 'no-store']);
      }
    } finally {
      await server.dispose();
    }
  });
});
