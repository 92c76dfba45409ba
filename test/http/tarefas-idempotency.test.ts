// SPEC §7.2, Idempotency-Key on the asynchronous POSTs (IETF httpapi draft semantics), the same
// suite in embedded and queue mode: a replay is the same task with no second job, another
// request with the key is 422, a key whose first request is still arriving is 409 with
// Retry-After, and a key whose request was refused is free again.
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, type UploadFile } from '../helpers/http.js';
import { BOUNDARY, closing, openUpload, partHead } from '../helpers/raw-http.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, postAsync, request, startHarness, uniqueName, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;
const retorno: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };
const otherRetorno: UploadFile = { field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' };
const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'censo.txt' };
const otherTxt: UploadFile = { field: 'txt', path: utf8.txt, filename: 'censo.txt' };

const REPLAY_OTHER = { erro: 'Idempotency-Key já usada com outra requisição.' };
const IN_PROGRESS = { erro: 'Requisição com esta Idempotency-Key em andamento.' };

const redis = useTestRedis();

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });
  const areas = async () => new Set(await readdir(server.uploadDir));
  /** A request's area is made once its admission (the key's reservation) is done. */
  const admitted = async (before: Set<string>) =>
    waitFor(async () => [...(await areas())].some((name) => !before.has(name)), { what: 'the slow request to be admitted' });

  it('the same request again is the same task: 202, the same Location, Idempotent-Replayed, and no second job', async () => {
    const key = `escola-${uniqueName()}`;
    const first = await postAsync(server, '/api/retorno-rf?format=csv', [retorno, txt], withKey(key));
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const id = first.json().id as string;
    const done = await waitForTarefa(server, id);
    const jobs = server.gate.seen.length;

    const again = await postAsync(server, '/api/retorno-rf?format=csv', [retorno, txt], withKey(key));
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('preference-applied')).toBe('respond-async');
    // Its current monitor: ended now, so no Retry-After.
    expect(again.json()).toEqual(done);
    expect(again.headers.get('retry-after')).toBeNull();
    expect(server.gate.seen.length).toBe(jobs);
  });

  it('a replay while the task waits answers its current monitor', async () => {
    server.gate.close();
    try {
      const key = `k-${uniqueName()}`;
      const first = await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key));
      const again = await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key));
      expect(again.status).toBe(202);
      expect(again.json().id).toBe(first.json().id);
      expect(['aguardando', 'processando']).toContain(again.json().estado);
      expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      server.gate.open();
    }
  });

  it.each([
    ['another file', '/api/retorno-rf', [otherRetorno, txt]],
    ['another census file', '/api/retorno-rf', [retorno, otherTxt]],
    ['another format', '/api/retorno-rf?format=xlsx', [retorno, txt]],
    ['another route', '/api/censo-corrigido', [retorno, txt]],
  ] as const)('the key with %s is 422, and creates nothing', async (_what, route, files) => {
    const key = `k-${uniqueName()}`;
    const jobs = server.gate.seen.length;
    const first = await postAsync(server, '/api/retorno-rf', [retorno, txt], withKey(key));
    expect(first.status).toBe(202);
    const other = await postAsync(server, route, files, withKey(key));
    expect(other.status).toBe(422);
    expect(other.json()).toEqual(REPLAY_OTHER);
    // The first request is still the key's.
    expect((await postAsync(server, '/api/retorno-rf', [retorno, txt], withKey(key))).json().id).toBe(first.json().id);
    await waitForTarefa(server, first.json().id as string);
    // One job: the first request's.
    expect(server.gate.seen.length).toBe(jobs + 1);
  });

  it('while the first request with the key is still arriving, another is 409 with Retry-After', async () => {
    const key = `slow-${uniqueName()}`;
    const before = await areas();
    const slow = openUpload(server.url, '/api/divergencias-rf', {
      'x-api-key': API_KEY,
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      prefer: 'respond-async',
      'idempotency-key': key,
    });
    const bytes = await readFile(basico.retorno.json);
    await slow.write(Buffer.concat([partHead('retorno', 'retorno.json'), bytes.subarray(0, 100)]));
    await admitted(before);
    // The reservation is taken before the body is read: the second request is refused at once.
    const second = await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key));
    expect(second.status).toBe(409);
    expect(second.json()).toEqual(IN_PROGRESS);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);

    const first = await slow.finish(Buffer.concat([bytes.subarray(100), closing()]));
    expect(first.status).toBe(202);
    const replay = await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key));
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json().id).toBe((first.body as { id: string }).id);
  });

  it('a key whose request was refused, or cut, is free again', async () => {
    const key = `k-${uniqueName()}`;
    const refused = await postAsync(server, '/api/retorno-rf', [retorno], withKey(key));
    expect(refused.status).toBe(400);
    expect((await postAsync(server, '/api/retorno-rf', [retorno, txt], withKey(key))).status).toBe(202);

    const cutKey = `cut-${uniqueName()}`;
    const before = await areas();
    const cut = openUpload(server.url, '/api/divergencias-rf', {
      'x-api-key': API_KEY,
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      prefer: 'respond-async',
      'idempotency-key': cutKey,
    });
    await cut.write(Buffer.concat([partHead('retorno', 'retorno.json'), Buffer.from('[{"a":')]));
    await admitted(before);
    expect((await postAsync(server, '/api/divergencias-rf', [retorno], withKey(cutKey))).status).toBe(409);
    cut.request.destroy();
    await waitFor(async () => (await postAsync(server, '/api/divergencias-rf', [retorno], withKey(cutKey))).status === 202, {
      what: 'the key to be free again',
    });
  });

  it('a deleted task forgets its key', async () => {
    const key = `k-${uniqueName()}`;
    const first = (await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key))).json().id as string;
    await waitForTarefa(server, first);
    expect((await request(server, 'DELETE', `/api/tarefas/${first}`)).status).toBe(204);
    const again = await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key));
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.json().id).not.toBe(first);
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['not ASCII', 'chave-ção'],
    ['a control character', 'a\tb'],
  ])('a key that is %s is a 400 before the body is read', async (_what, key) => {
    const answer = await postAsync(server, '/api/divergencias-rf', [retorno], { headers: { 'idempotency-key': key } }).catch(() => null);
    // fetch itself refuses some header values (not ASCII): nothing reached the service then.
    if (answer === null) return;
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual({ erro: 'Idempotency-Key inválida: use de 1 a 255 caracteres ASCII imprimíveis.' });
  });

  it('a 255-character key of printable ASCII is accepted', async () => {
    const key = '~'.repeat(200) + uniqueName().padEnd(55, '!');
    expect(key.length).toBe(255);
    const answer = await postAsync(server, '/api/divergencias-rf', [retorno], withKey(key));
    expect(answer.status).toBe(202);
    await waitForTarefa(server, answer.json().id as string);
  });
});
