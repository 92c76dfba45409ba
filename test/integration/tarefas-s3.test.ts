// Asynchronous intake's storage work on an S3 bucket (s3rver on loopback), in embedded and queue
// mode: the upload's objects deleted when its job ends and the result kept (a batch's task's lines
// of the combined CSV too), the result answered from the bucket, and every object deleted by DELETE
// and by the retention sweep.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIVERGENCIA_COLUMNS, cellValues, csvLine } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, type UploadFile } from '../helpers/http.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { S3_CREDENTIALS, startTestS3, type TestS3 } from '../helpers/s3.js';
import { MODES, postAsync, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retorno: UploadFile = { field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' };
const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'censo.txt' };

let s3: TestS3;
let redis: TestRedis;
beforeAll(async () => {
  s3 = await startTestS3();
  redis = await startTestRedis();
  // In-process services read their credentials where any AWS client does.
  Object.assign(process.env, S3_CREDENTIALS);
});
afterAll(async () => {
  await s3?.dispose();
  await redis?.stop();
});

describe.each(MODES)('%s mode on an S3 bucket', (mode: Mode) => {
  const prefix = `tarefas-${mode}-${randomUUID()}/`;
  let server: Harness;
  let short: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url, env: s3.env(prefix) });
    short = await startHarness(mode, { redisUrl: redis.url, env: { ...s3.env(`${prefix}short/`), RESULT_TTL_HOURS: '0.0005' } });
  });
  afterAll(async () => {
    await server?.dispose();
    await short?.dispose();
  });

  const objects = async (id: string, under = prefix) =>
    (await s3.keys(`${under}${id}/`)).map((key) => key.slice(`${under}${id}/`.length)).sort();

  it('the result comes from the bucket, the upload objects go when the job ends, DELETE removes the rest', async () => {
    const sync = await request(server, 'POST', '/api/retorno-rf?format=csv', { body: await formWith([retorno, txt]) });
    const id = (await postAsync(server, '/api/retorno-rf?format=csv', [retorno, txt])).json().id as string;
    expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    await waitFor(async () => JSON.stringify(await objects(id)) === '["resultado"]', { what: 'only the result object left' });
    const result = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
    expect(result.bytes.toString()).toBe(sync.bytes.toString());
    expect(result.headers.get('content-disposition')).toBe(sync.headers.get('content-disposition'));
    expect((await request(server, 'DELETE', `/api/tarefas/${id}`)).status).toBe(204);
    expect(await objects(id)).toEqual([]);
  });

  it('DELETE of a waiting task removes its upload objects at once', async () => {
    server.gate.close();
    try {
      const busy = await Promise.all(
        [1, 2].map(async () => (await postAsync(server, '/api/divergencias-rf', [retorno])).json().id as string),
      );
      for (const id of busy) await waitForTarefa(server, id, (m) => m.estado === 'processando');
      const id = (await postAsync(server, '/api/retorno-rf', [retorno, txt])).json().id as string;
      expect(await objects(id)).toEqual(['censo.txt', 'retorno.xlsx']);
      expect((await request(server, 'DELETE', `/api/tarefas/${id}`)).status).toBe(204);
      expect(await objects(id)).toEqual([]);
      server.gate.open();
      for (const other of busy) await waitForTarefa(server, other);
    } finally {
      server.gate.open();
    }
  });

  it('the retention sweep deletes the result object', async () => {
    const id = (await postAsync(short, '/api/divergencias-rf', [retorno])).json().id as string;
    await waitForTarefa(short, id);
    await waitFor(async () => JSON.stringify(await objects(id, `${prefix}short/`)) === '["resultado"]', { what: 'the result object' });
    await waitFor(async () => (await request(short, 'GET', `/api/tarefas/${id}`)).status === 404, {
      timeoutMs: onThisMachine(15_000),
      what: 'expiry',
    });
    await waitFor(async () => (await objects(id, `${prefix}short/`)).length === 0, { what: 'the bucket to be emptied' });
  });

  it("a batch's divergencias-rf task keeps its lines of the combined CSV beside its result: the combined CSV is sent from them, DELETE removes both", async () => {
    const lote = (await request(server, 'POST', '/api/lotes')).json().id as string;
    const id = (
      await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, {
        body: await formWith([retorno], { referencia: 'escola, "1"' }),
      })
    ).json().id as string;
    expect((await waitForTarefa(server, id)).estado).toBe('concluida');
    await waitFor(async () => JSON.stringify(await objects(id)) === '["resultado","resultado-lote.csv"]', {
      what: 'the result and its lines',
    });
    const divergencias = (await request(server, 'GET', `/api/tarefas/${id}/resultado`)).json().divergencias as object[];
    expect(divergencias.length).toBeGreaterThan(0);
    expect((await request(server, 'POST', `/api/lotes/${lote}/fechar`)).status).toBe(200);
    const combined = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`);
    expect(combined.bytes.toString('utf8')).toBe(
      csvLine(['referencia', 'arquivo', ...DIVERGENCIA_COLUMNS]) +
        divergencias.map((d) => csvLine(['escola, "1"', 'retorno.xlsx', ...cellValues(d, DIVERGENCIA_COLUMNS)])).join(''),
    );
    expect((await request(server, 'DELETE', `/api/tarefas/${id}`)).status).toBe(204);
    expect(await objects(id)).toEqual([]);
  });

  it('DELETE of a batch removes the objects of every task, finished or not', async () => {
    const lote = (await request(server, 'POST', '/api/lotes')).json().id as string;
    const upload = async () =>
      (await request(server, 'POST', `/api/lotes/${lote}/retorno-rf`, { body: await formWith([retorno, txt], { referencia: 'x' }) })).json()
        .id as string;
    const done = await upload();
    await waitForTarefa(server, done);
    server.gate.close();
    try {
      const held = await upload();
      await waitForTarefa(server, held, (m) => m.estado === 'processando');
      expect(await objects(held)).toEqual(['censo.txt', 'retorno.xlsx']);
      await waitFor(async () => JSON.stringify(await objects(done)) === '["resultado"]', { what: 'the first result' });
      expect((await request(server, 'DELETE', `/api/lotes/${lote}`)).status).toBe(204);
      expect(await objects(held)).toEqual([]);
      expect(await objects(done)).toEqual([]);
    } finally {
      server.gate.open();
    }
  });
});
