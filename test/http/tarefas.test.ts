// SPEC §7.1 over HTTP, the same suite in embedded and queue mode: `Prefer: respond-async` on the
// three upload routes, the task monitor, the result (the synchronous answer's very bytes and
// headers, and the other formats converted from it), DELETE of a waiting and of a running task,
// 404 and 409 with their exact messages, the backlog bound, the synchronous requests' priority
// and the retention sweep.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { areaFolderName } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, type UploadFile } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import {
  MODES,
  MONITOR_KEYS,
  areaFiles,
  monitor,
  postAsync,
  request,
  startHarness,
  waitForTarefa,
  workbookSheets,
  type Harness,
  type Mode,
} from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const retornoJson: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };
const retornoXlsx: UploadFile = { field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' };
const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'Escola Açaí.txt' };
const unreadable: UploadFile = { field: 'retorno', content: '{"erros": [', filename: 'retorno.json' };
// Line 2 of the return is a person; this census file has no line 2.
const otherTxt: UploadFile = { field: 'txt', content: '00|12345678|1\n', filename: 'outra.txt' };

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const redis = useTestRedis();

async function syncAnswer(server: { url: string }, route: string, files: readonly UploadFile[]) {
  return request(server, 'POST', route, { body: await formWith(files) });
}

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  describe('Prefer: respond-async', () => {
    it('answers 202 with Location, Preference-Applied, Retry-After and the monitor, once the upload is in', async () => {
      const answer = await postAsync(server, '/api/divergencias-rf', [retornoJson]);
      expect(answer.status).toBe(202);
      const body = answer.json();
      expect(Object.keys(body).sort()).toEqual(MONITOR_KEYS);
      expect(body.id).toMatch(UUID);
      expect(answer.headers.get('location')).toBe(`/api/tarefas/${body.id}`);
      expect(answer.headers.get('preference-applied')).toBe('respond-async');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(body).toMatchObject({
        rota: 'divergencias-rf',
        formato: 'json',
        estado: 'aguardando',
        iniciada_em: null,
        concluida_em: null,
        expira_em: null,
        resultado: null,
        erro: null,
        referencia: null,
        lote: null,
      });
      expect(body.criada_em).toMatch(RFC3339);
      await waitForTarefa(server, body.id as string);
    });

    it('takes the preference among others, in any case (RFC 7240)', async () => {
      const answer = await postAsync(server, '/api/divergencias-rf', [retornoJson], {
        headers: { prefer: 'handling=lenient, Respond-Async; wait=5' },
      });
      expect(answer.status).toBe(202);
      expect(answer.headers.get('preference-applied')).toBe('respond-async');
      await waitForTarefa(server, answer.json().id as string);
    });

    it('ids are distinct and unguessable (UUID v4: 122 random bits)', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++) ids.add((await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string);
      expect(ids.size).toBe(5);
      for (const id of ids) expect(id).toMatch(UUID);
      for (const id of ids) await waitForTarefa(server, id);
    });

    it('without the header nothing changes: the synchronous answer', async () => {
      const answer = await syncAnswer(server, '/api/divergencias-rf', [retornoJson]);
      expect(answer.status).toBe(200);
      expect(answer.json()).toEqual(basico.expectedDivergencias);
      expect(answer.headers.get('preference-applied')).toBeNull();
    });
  });

  describe('the result is exactly the synchronous answer', () => {
    const cases: Array<[string, readonly UploadFile[]]> = [
      ['/api/divergencias-rf', [retornoJson]],
      ['/api/divergencias-rf?format=csv', [retornoXlsx]],
      ['/api/retorno-rf', [retornoJson, txt]],
      ['/api/retorno-rf?format=csv', [retornoXlsx, txt]],
      ['/api/censo-corrigido', [retornoJson, txt]],
    ];
    it.each(cases)('%s: same status, bytes, type and headers', async (route, files) => {
      const sync = await syncAnswer(server, route, files);
      expect(sync.status).toBe(200);
      const accepted = await postAsync(server, route, files);
      expect(accepted.status).toBe(202);
      const id = accepted.json().id as string;
      const done = await waitForTarefa(server, id);
      expect(done).toMatchObject({ estado: 'concluida', resultado: `/api/tarefas/${id}/resultado`, erro: null });
      expect(done.iniciada_em).toMatch(RFC3339);
      expect(done.concluida_em).toMatch(RFC3339);
      // Retention: RESULT_TTL_HOURS (24) after the end.
      expect(Date.parse(done.expira_em as string) - Date.parse(done.concluida_em as string)).toBe(24 * 3_600_000);

      const result = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
      expect(result.status).toBe(200);
      expect(result.bytes.equals(sync.bytes)).toBe(true);
      for (const header of ['content-type', 'content-disposition', 'censo-pessoas-corrigidas', 'censo-correcoes-nao-aplicadas']) {
        expect(result.headers.get(header), header).toBe(sync.headers.get(header));
      }
      // It can be read again, and the monitor has no Retry-After once the task has ended.
      expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).bytes.equals(sync.bytes)).toBe(true);
      expect((await request(server, 'GET', `/api/tarefas/${id}`)).headers.get('retry-after')).toBeNull();
    });

    it('a corrected-file task has one format: ?format= on its result is a 400, as an unknown format is elsewhere', async () => {
      const id = (await postAsync(server, '/api/censo-corrigido', [retornoJson, txt])).json().id as string;
      await waitForTarefa(server, id);
      for (const format of ['csv', 'json', 'txt']) {
        const refused = await request(server, 'GET', `/api/tarefas/${id}/resultado?format=${format}`);
        expect([format, refused.status, refused.json()]).toEqual([
          format,
          400,
          { erro: 'Parâmetro format não se aplica ao arquivo corrigido, que é sempre o txt do Censo.' },
        ]);
      }
      expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).status).toBe(200);
    });

    it('xlsx: the same workbook as the synchronous answer', async () => {
      const route = '/api/divergencias-rf?format=xlsx';
      const sync = await syncAnswer(server, route, [retornoXlsx]);
      const id = (await postAsync(server, route, [retornoXlsx])).json().id as string;
      expect((await waitForTarefa(server, id)).formato).toBe('xlsx');
      const result = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
      expect(result.headers.get('content-type')).toBe(sync.headers.get('content-type'));
      expect(result.headers.get('content-disposition')).toBe(sync.headers.get('content-disposition'));
      expect(await workbookSheets(result.bytes)).toEqual(await workbookSheets(sync.bytes));
    });

    it('the upload is deleted when the job ends; the result stays', async () => {
      const id = (await postAsync(server, '/api/retorno-rf', [retornoJson, txt])).json().id as string;
      await waitForTarefa(server, id);
      await waitFor(async () => JSON.stringify(await areaFiles(server, id)) === '["resultado"]', { what: 'only the result left' });
    });
  });

  describe('?format= on the result: another format from the stored result, no new job', () => {
    it.each([
      ['/api/divergencias-rf', [retornoJson]],
      ['/api/retorno-rf', [retornoJson, txt]],
    ] as const)('%s', async (route, files) => {
      const id = (await postAsync(server, route, files)).json().id as string;
      await waitForTarefa(server, id);
      const jobsBefore = server.gate.seen.length;
      for (const format of ['csv', 'json'] as const) {
        const sync = await syncAnswer(server, `${route}?format=${format}`, files);
        const converted = await request(server, 'GET', `/api/tarefas/${id}/resultado?format=${format}`);
        expect(converted.status).toBe(200);
        expect(converted.bytes.toString('utf8')).toBe(sync.bytes.toString('utf8'));
        expect(converted.headers.get('content-type')).toBe(sync.headers.get('content-type'));
        expect(converted.headers.get('content-disposition')).toBe(sync.headers.get('content-disposition'));
      }
      const sync = await syncAnswer(server, `${route}?format=xlsx`, files);
      const xlsx = await request(server, 'GET', `/api/tarefas/${id}/resultado?format=xlsx`);
      expect(xlsx.headers.get('content-type')).toBe(sync.headers.get('content-type'));
      expect(xlsx.headers.get('content-disposition')).toBe(sync.headers.get('content-disposition'));
      expect(await workbookSheets(xlsx.bytes)).toEqual(await workbookSheets(sync.bytes));
      // Three synchronous jobs for the comparisons; the conversions ran none.
      expect(server.gate.seen.length - jobsBefore).toBe(3);
    });

    it('any other format is a 400 with the synchronous route message', async () => {
      const id = (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string;
      await waitForTarefa(server, id);
      const answer = await request(server, 'GET', `/api/tarefas/${id}/resultado?format=pdf`);
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({ erro: 'Parâmetro format deve ser json, csv ou xlsx.' });
    });
  });

  describe('errors', () => {
    it('what the checks before the job find is answered at once, as the synchronous route does', async () => {
      const missing = await postAsync(server, '/api/retorno-rf', [retornoJson]);
      expect(missing.status).toBe(400);
      expect(missing.json()).toEqual({ erro: 'Arquivo ausente: envie o campo txt.' });
      const wrongExtension = await postAsync(server, '/api/divergencias-rf', [{ field: 'retorno', content: 'x', filename: 'r.csv' }]);
      expect(wrongExtension.json()).toEqual({ erro: 'Extensão inválida para retorno: envie .json ou .xlsx.' });
      const format = await postAsync(server, '/api/divergencias-rf?format=pdf', [retornoJson]);
      expect(format.status).toBe(400);
      const noKey = await request(server, 'POST', '/api/divergencias-rf', {
        body: await formWith([retornoJson]),
        headers: { 'x-api-key': 'wrong', prefer: 'respond-async' },
      });
      expect(noKey.status).toBe(401);
      expect(noKey.json()).toEqual({ erro: 'Credencial inválida (header x-api-key).' });
      const notMultipart = await request(server, 'POST', '/api/divergencias-rf', {
        body: '{}',
        headers: { 'content-type': 'application/json', prefer: 'respond-async' },
      });
      expect(notMultipart.status).toBe(400);
    });

    it("what the job finds becomes the task's erro, and the result answers it as the synchronous route would", async () => {
      for (const [route, files] of [
        ['/api/divergencias-rf', [unreadable]],
        ['/api/retorno-rf', [retornoJson, otherTxt]],
      ] as const) {
        const sync = await syncAnswer(server, route, files);
        expect(sync.status).toBeGreaterThanOrEqual(400);
        const id = (await postAsync(server, route, files)).json().id as string;
        const failed = await waitForTarefa(server, id);
        expect(failed).toMatchObject({ estado: 'falhou', resultado: null, erro: { status: sync.status, erro: sync.json().erro } });
        const result = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
        expect(result.status).toBe(sync.status);
        expect(result.json()).toEqual(sync.json());
        // Nothing of a failed task's files stays but its record.
        await waitFor(async () => ((await areaFiles(server, id)) ?? []).length === 0, { what: 'the failed upload to go' });
      }
    });

    it('an unknown, malformed or deleted id is 404 Tarefa não encontrada.', async () => {
      for (const path of [
        '/api/tarefas/5f0c1d5e-0000-4000-8000-000000000000',
        '/api/tarefas/x',
        '/api/tarefas/5F0C1D5E-0000-4000-8000-000000000000',
      ]) {
        for (const [method, suffix] of [
          ['GET', ''],
          ['GET', '/resultado'],
          ['DELETE', ''],
        ] as const) {
          const answer = await request(server, method, `${path}${suffix}`);
          expect(answer.status, `${method} ${path}${suffix}`).toBe(404);
          expect(answer.json()).toEqual({ erro: 'Tarefa não encontrada.' });
        }
      }
    });

    it('reading a task needs the upload key', async () => {
      const id = (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string;
      const answer = await request(server, 'GET', `/api/tarefas/${id}`, { headers: { 'x-api-key': 'nope' } });
      expect(answer.status).toBe(401);
      await waitForTarefa(server, id);
    });
  });

  describe('waiting and running tasks', () => {
    it('processando while its job runs, aguardando behind the others; the result is 409 with Retry-After until the end', async () => {
      server.gate.close();
      try {
        const running = await Promise.all(
          [1, 2].map(async () => (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string),
        );
        const waiting = (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string;
        for (const id of running) {
          const m = await waitForTarefa(server, id, (m) => m.estado === 'processando');
          expect(m.iniciada_em).toMatch(RFC3339);
        }
        const m = await monitor(server, waiting);
        expect(m).toMatchObject({ estado: 'aguardando', iniciada_em: null });
        for (const id of [running[0]!, waiting]) {
          const early = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
          expect(early.status).toBe(409);
          expect(early.json()).toEqual({ erro: 'Tarefa ainda não concluída.' });
          expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(Number((await request(server, 'GET', `/api/tarefas/${id}`)).headers.get('retry-after'))).toBeGreaterThan(0);
        }
        server.gate.open();
        for (const id of [...running, waiting]) expect((await waitForTarefa(server, id)).estado).toBe('concluida');
      } finally {
        server.gate.open();
      }
    });

    it('DELETE of a waiting task: 204, its job never runs, its files and record are gone', async () => {
      server.gate.close();
      try {
        const busy = await Promise.all(
          [1, 2].map(async () => (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string),
        );
        for (const id of busy) await waitForTarefa(server, id, (m) => m.estado === 'processando');
        const id = (await postAsync(server, '/api/retorno-rf', [retornoJson, txt])).json().id as string;
        expect((await monitor(server, id)).estado).toBe('aguardando');
        const deleted = await request(server, 'DELETE', `/api/tarefas/${id}`);
        expect(deleted.status).toBe(204);
        expect(deleted.bytes.length).toBe(0);
        expect(await areaFiles(server, id)).toBeNull();
        expect((await request(server, 'GET', `/api/tarefas/${id}`)).json()).toEqual({ erro: 'Tarefa não encontrada.' });
        expect((await request(server, 'DELETE', `/api/tarefas/${id}`)).status).toBe(404);
        server.gate.open();
        for (const other of busy) await waitForTarefa(server, other);
        // The two that were running and nothing after: the deleted task never reached a thread.
        expect(server.gate.seen.some((job) => job.area === id)).toBe(false);
      } finally {
        server.gate.open();
      }
    });

    it('DELETE of a running task: 204, its job is stopped, its files and record are gone', async () => {
      server.gate.close();
      try {
        const id = (await postAsync(server, '/api/retorno-rf', [retornoJson, txt])).json().id as string;
        await waitForTarefa(server, id, (m) => m.estado === 'processando');
        // The task is recorded `processando` as its job starts, a moment before the job reaches the
        // gate (seen once, loaded, on Node 24 in CI's parallel group): wait for the gate too.
        await waitFor(() => server.gate.seen.some((seen) => seen.area === id), { what: 'the job at the gate' });
        const job = server.gate.seen.find((seen) => seen.area === id)!;
        expect(job.signal?.aborted).toBe(false);
        expect((await request(server, 'DELETE', `/api/tarefas/${id}`)).status).toBe(204);
        await waitFor(() => job.signal?.aborted === true, { what: 'the running job to be stopped' });
        expect(await areaFiles(server, id)).toBeNull();
        expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).status).toBe(404);
      } finally {
        server.gate.open();
      }
    });

    it('a synchronous request never waits behind tasks: with every task slot taken and a task waiting, its job starts at once', async () => {
      server.gate.close();
      try {
        const first = await Promise.all(
          [1, 2].map(async () => (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string),
        );
        for (const id of first) await waitForTarefa(server, id, (m) => m.estado === 'processando');
        const queued = (await postAsync(server, '/api/divergencias-rf', [retornoJson])).json().id as string;
        const seenBefore = server.gate.seen.length;
        const sync = syncAnswer(server, '/api/retorno-rf', [retornoJson, txt]);
        // The synchronous job reaches the executor while both tasks hold their slots (in queue
        // mode: the tasks' queue has workers of its own) and before the waiting task.
        await waitFor(() => server.gate.seen.length > seenBefore, { what: 'the synchronous job' });
        expect(server.gate.seen.slice(seenBefore).map((job) => job.kind)).toEqual(['retorno-rf']);
        server.gate.open();
        expect((await sync).status).toBe(200);
        expect((await waitForTarefa(server, queued)).estado).toBe('concluida');
      } finally {
        server.gate.open();
      }
    });
  });

  describe('MAX_QUEUED_TAREFAS', () => {
    let small: Harness;
    beforeAll(async () => {
      small = await startHarness(mode, { redisUrl: redis.url, env: { MAX_QUEUED_TAREFAS: '1' } });
    });
    afterAll(async () => {
      await small?.dispose();
    });

    it('past the bound a new task is 503 with Retry-After, before its body is stored', async () => {
      small.gate.close();
      try {
        // One at a time: each is running (no longer waiting) before the next is admitted.
        for (let i = 0; i < 2; i++) {
          const id = (await postAsync(small, '/api/divergencias-rf', [retornoJson])).json().id as string;
          await waitForTarefa(small, id, (m) => m.estado === 'processando');
        }
        const waiting = await postAsync(small, '/api/divergencias-rf', [retornoJson]);
        expect(waiting.status).toBe(202);
        const refused = await postAsync(small, '/api/divergencias-rf', [retornoJson]);
        expect(refused.status).toBe(503);
        expect(refused.json()).toEqual({ erro: 'Serviço sobrecarregado, tente novamente em instantes.' });
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        // Synchronous requests are not bounded by it.
        const sync = syncAnswer(small, '/api/divergencias-rf', [retornoJson]);
        small.gate.open();
        expect((await sync).status).toBe(200);
        await waitForTarefa(small, waiting.json().id as string);
        expect((await postAsync(small, '/api/divergencias-rf', [retornoJson])).status).toBe(202);
      } finally {
        small.gate.open();
      }
    });
  });

  describe('retention (RESULT_TTL_HOURS)', () => {
    let short: Harness;
    beforeAll(async () => {
      // 0.0005 h = 1.8 s.
      short = await startHarness(mode, { redisUrl: redis.url, env: { RESULT_TTL_HOURS: '0.0005' } });
    });
    afterAll(async () => {
      await short?.dispose();
    });

    it('a finished task and its result are deleted RESULT_TTL_HOURS after concluida_em; then 404', async () => {
      const id = (await postAsync(short, '/api/divergencias-rf', [retornoJson])).json().id as string;
      const done = await waitForTarefa(short, id);
      // 1.8 s, both times shown to the second.
      expect([1_000, 2_000]).toContain(Date.parse(done.expira_em as string) - Date.parse(done.concluida_em as string));
      expect((await request(short, 'GET', `/api/tarefas/${id}/resultado`)).status).toBe(200);
      await waitFor(async () => (await request(short, 'GET', `/api/tarefas/${id}`)).status === 404, {
        timeoutMs: onThisMachine(15_000),
        what: 'the task to expire',
      });
      expect((await request(short, 'GET', `/api/tarefas/${id}/resultado`)).json()).toEqual({ erro: 'Tarefa não encontrada.' });
      // The record goes first (nobody can read it any more), then its files.
      await waitFor(async () => (await areaFiles(short, id)) === null, { what: 'the files to be deleted' });
    });
  });
});

describe('embedded mode: a restart forgets the tasks', () => {
  it("their folders are removed at the next start once older than a result can live; younger ones and other programs' files are left", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'censo-tarefas-restart-'));
    const old = path.join(dir, areaFolderName(randomUUID()));
    const young = path.join(dir, areaFolderName(randomUUID()));
    // UPLOAD_DIR may be a folder others use (/tmp): names this service does not make are never touched.
    const foreign = [path.join(dir, randomUUID()), path.join(dir, 'relatorios'), path.join(dir, `${areaFolderName(randomUUID())}-copia`)];
    for (const folder of [old, young, ...foreign]) {
      await mkdir(folder);
      await writeFile(path.join(folder, 'resultado'), '{"divergencias":[]}');
    }
    // Past LOTE_MAX_HOURS + RESULT_TTL_HOURS (72 h + 24 h by default): a batch's result lives that long.
    const longAgo = new Date(Date.now() - 100 * 3_600_000);
    const twoDaysAgo = new Date(Date.now() - 48 * 3_600_000);
    await utimes(old, longAgo, longAgo);
    await utimes(young, twoDaysAgo, twoDaysAgo);
    for (const folder of foreign) await utimes(folder, longAgo, longAgo);
    const server = await startHarness('embedded', { redisUrl: redis.url, uploadDir: dir });
    try {
      expect((await readdir(dir)).sort()).toEqual([young, ...foreign].map((f) => path.basename(f)).sort());
    } finally {
      await server.dispose();
    }
  });
});
