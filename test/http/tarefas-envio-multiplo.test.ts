// Several returns in one request to a batch's divergencias-rf route (SPEC §7.3, decided for issue
// 35): one task per file, in the order sent, all created or none; the i-th referencia goes with the
// i-th file; the Idempotency-Key covers the whole request; every file counts against
// MAX_QUEUED_TAREFAS. Both modes, as clients send them: fetch's FormData (fields where appended)
// and Python requests' order (every text field first, then the files).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  BATCH_LINES_FILE,
  DIVERGENCIA_COLUMNS,
  JOB_OPTIONS,
  JOB_QUEUE,
  cellValues,
  csvLine,
  withContract,
  type JobData,
} from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { useTestRedis } from '../helpers/redis.js';
import { waitingTarefa } from '../helpers/tarefa-record.js';
import { MODES, monitor, request, startHarness, waitForTarefa, type Answer, type Harness, type Mode } from '../helpers/tarefas.js';
import { readdir, readFile, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;
const DIVERGENCIAS = (basico.expectedDivergencias as { divergencias: unknown[] }).divergencias;
const DIVERGENCIAS_UTF8 = (utf8.expectedDivergencias as { divergencias: unknown[] }).divergencias;

const redis = useTestRedis();
const monitors = (answer: Answer) => answer.json().tarefas as Array<Record<string, unknown> & { id: string }>;

interface Part {
  readonly referencia?: string;
  readonly name: string;
  readonly content: Buffer | string;
}

/** fetch's order: each file's referencia right before it. */
function interleaved(parts: readonly Part[]): FormData {
  const form = new FormData();
  for (const part of parts) {
    if (part.referencia !== undefined) form.append('referencia', part.referencia);
    form.append('retorno', new Blob([part.content]), part.name);
  }
  return form;
}

/** Python requests' order (`data=` then `files=`): every text field, then every file. */
function fieldsFirst(parts: readonly Part[]): FormData {
  const form = new FormData();
  for (const part of parts) if (part.referencia !== undefined) form.append('referencia', part.referencia);
  for (const part of parts) form.append('retorno', new Blob([part.content]), part.name);
  return form;
}

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  let json: Buffer;
  let jsonUtf8: Buffer;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
    json = await readFile(basico.retorno.json!);
    jsonUtf8 = await readFile(utf8.retorno.json!);
  });
  afterAll(async () => {
    await server?.dispose();
  });

  const createLote = async () =>
    (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json().id as string;
  const send = (lote: string, body: FormData, headers: Record<string, string> = {}) =>
    request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body, headers });
  const tasksOf = async (lote: string) =>
    (await request(server, 'GET', `/api/lotes/${lote}/tarefas?limit=1000`)).json().tarefas as Array<Record<string, unknown>>;
  const areas = async () => (await readdir(server.uploadDir)).filter((name) => name.startsWith('censo-')).sort();

  it.each([
    ['interleaved', interleaved],
    ['every referencia first (Python requests)', fieldsFirst],
  ])('three returns in one request (%s): 202 with their monitors in order, one task each, each its own result', async (_, build) => {
    const lote = await createLote();
    const answer = await send(
      lote,
      build([
        { referencia: '11000001', name: 'escola-a.json', content: json },
        { referencia: '11000002', name: 'escola-b.json', content: jsonUtf8 },
        { referencia: '11000003', name: 'escola-c.json', content: json },
      ]),
    );
    expect(answer.status).toBe(202);
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(answer.headers.get('location')).toBeNull();
    const sent = monitors(answer);
    expect(sent.map((t) => [t.referencia, t.lote, t.estado, (t.arquivos as Array<{ nome: string }>)[0]!.nome])).toEqual([
      ['11000001', lote, 'aguardando', 'escola-a.json'],
      ['11000002', lote, 'aguardando', 'escola-b.json'],
      ['11000003', lote, 'aguardando', 'escola-c.json'],
    ]);
    expect(new Set(sent.map((t) => t.id)).size).toBe(3);
    // Creation order is the order sent.
    expect((await tasksOf(lote)).map((t) => t.id)).toEqual(sent.map((t) => t.id));
    for (const [i, expected] of [DIVERGENCIAS, DIVERGENCIAS_UTF8, DIVERGENCIAS].entries()) {
      expect((await waitForTarefa(server, sent[i]!.id)).estado).toBe('concluida');
      const result = await request(server, 'GET', `/api/tarefas/${sent[i]!.id}/resultado`);
      expect(result.json().divergencias).toEqual(expected);
    }
    expect((await request(server, 'GET', `/api/lotes/${lote}`)).json().tarefas).toMatchObject({ total: 3, concluida: 3 });
  });

  it('without any referencia every task has none; one file keeps its old answer (Location, the monitor)', async () => {
    const lote = await createLote();
    const many = await send(
      lote,
      interleaved([
        { name: 'a.json', content: json },
        { name: 'b.json', content: json },
      ]),
    );
    expect(monitors(many).map((t) => t.referencia)).toEqual([null, null]);
    const one = await send(lote, interleaved([{ referencia: 'x', name: 'c.json', content: json }]));
    expect(one.status).toBe(202);
    expect(one.headers.get('location')).toBe(`/api/tarefas/${one.json().id}`);
    expect(one.json()).toMatchObject({ referencia: 'x', lote });
  });

  it('refuses the whole request, creating no task and leaving no file, when a referencia is missing or a file is wrong', async () => {
    const lote = await createLote();
    const before = await areas();
    const missing = await send(
      lote,
      fieldsFirst([
        { referencia: 'a', name: 'a.json', content: json },
        { name: 'b.json', content: json },
      ]),
    );
    expect([missing.status, missing.json()]).toEqual([400, { erro: 'Envie um campo referencia para cada arquivo retorno, ou nenhum.' }]);
    const wrong = await send(
      lote,
      interleaved([
        { referencia: 'a', name: 'a.json', content: json },
        { referencia: 'b', name: 'b.csv', content: 'x' },
      ]),
    );
    expect([wrong.status, wrong.json()]).toEqual([400, { erro: 'Extensão inválida para retorno: envie .json ou .xlsx.' }]);
    const txt = new FormData();
    txt.append('retorno', new Blob([json]), 'a.json');
    txt.append('txt', new Blob(['x']), 'censo.txt');
    expect((await send(lote, txt)).json()).toEqual({ erro: 'Campo inesperado: txt.' });
    const none = new FormData();
    none.append('referencia', 'a');
    expect((await send(lote, none)).json()).toEqual({ erro: 'Arquivo ausente: envie o campo retorno.' });
    expect(await tasksOf(lote)).toEqual([]);
    expect((await request(server, 'GET', `/api/lotes/${lote}`)).json().tarefas).toMatchObject({ total: 0 });
    // Each refused request's files are gone once its answer is out.
    await expect.poll(areas, { timeout: onThisMachine(5_000) }).toEqual(before);
  });

  it('the Idempotency-Key covers the whole request: the same request gets the same tasks, another one 422', async () => {
    const lote = await createLote();
    const parts: Part[] = [
      { referencia: 'a', name: 'a.json', content: json },
      { referencia: 'b', name: 'b.json', content: jsonUtf8 },
    ];
    const headers = { 'idempotency-key': 'envio-1' };
    const first = await send(lote, interleaved(parts), headers);
    const again = await send(lote, fieldsFirst(parts), headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(monitors(again).map((t) => t.id)).toEqual(monitors(first).map((t) => t.id));
    // Another order of the same files is another request.
    const swapped = await send(lote, interleaved([parts[1]!, parts[0]!]), headers);
    expect([swapped.status, swapped.json()]).toEqual([422, { erro: 'Idempotency-Key já usada com outra requisição.' }]);
    expect((await tasksOf(lote)).length).toBe(2);
    for (const task of monitors(first)) expect((await monitor(server, task.id)).lote).toBe(lote);
  });

  it(
    "the batch's combined CSV is each task's result, row for row, for a small result (parsed whole) and one over 4 MB (read item by item); a task whose job stored no lines of it (a worker from before them) gives the same bytes",
    async () => {
      // 25,000 divergences: a stored result of about 5 MB, past the size parsed at once.
      const rows = Array.from({ length: 25_000 }, (_, i) => ({
        Registro: '30',
        Linha: String(i + 2),
        'Código na Escola': `ALU${String(i).padStart(6, '0')}`,
        Campo: 'Data de nascimento',
        Mensagem: 'O campo não está de acordo com a base da Receita Federal.',
        Conteúdo: `14/03/2014 -- "15/03/2014", ${i}`,
      }));
      const lote = await createLote();
      const sent = monitors(
        await send(
          lote,
          interleaved([
            { referencia: '=pequena', name: 'pequena.json', content: json },
            // Everything a CSV field must quote, in the leading fields the job writes itself.
            { referencia: 'grande, "regional"\r\nnº 2', name: 'grande, ç.json', content: JSON.stringify(rows) },
          ]),
        ),
      );
      await request(server, 'POST', `/api/lotes/${lote}/fechar`);
      for (const task of sent) expect((await waitForTarefa(server, task.id, undefined, 60_000)).estado).toBe('concluida');
      const results: object[][] = [];
      for (const task of sent)
        results.push((await request(server, 'GET', `/api/tarefas/${task.id}/resultado`)).json().divergencias as object[]);
      expect(results[1]!.length).toBe(25_000);
      expect((await request(server, 'GET', `/api/tarefas/${sent[1]!.id}/resultado`)).bytes.length).toBeGreaterThan(4 * 1024 * 1024);
      const header = csvLine(['referencia', 'arquivo', ...DIVERGENCIA_COLUMNS]);
      const linesOf = (i: number) =>
        results[i]!.map((d) =>
          csvLine([sent[i]!.referencia as string, ['pequena.json', 'grande, ç.json'][i]!, ...cellValues(d, DIVERGENCIA_COLUMNS)]),
        ).join('');
      const expected = header + linesOf(0) + linesOf(1);
      expect(sent[1]!.referencia).toBe('grande, "regional"\r\nnº 2');
      const combined = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`);
      expect(combined.status).toBe(200);
      expect(combined.bytes.toString('utf8')).toBe(expected);
      // Sent as each task's job stored its lines; without them, converted from the task's JSON.
      const lines = (id: string) => path.join(server.uploadDir, `censo-${id}`, BATCH_LINES_FILE);
      for (const task of sent) expect((await stat(lines(task.id))).size).toBeGreaterThan(0);
      await rm(lines(sent[1]!.id));
      const converted = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`);
      expect(converted.bytes.toString('utf8')).toBe(expected);
      // The task's own CSV comes from the same reading.
      const own = await request(server, 'GET', `/api/tarefas/${sent[1]!.id}/resultado?format=csv`);
      expect(own.bytes.toString('utf8')).toBe(
        csvLine([...DIVERGENCIA_COLUMNS]) + results[1]!.map((d) => csvLine(cellValues(d, DIVERGENCIA_COLUMNS))).join(''),
      );
      // A task deleted is left out of the batch's answers.
      expect((await request(server, 'DELETE', `/api/tarefas/${sent[0]!.id}`)).status).toBe(204);
      const without = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`);
      expect([without.status, without.bytes.toString('utf8')]).toEqual([200, header + linesOf(1)]);
      // A task still recorded whose result the storage cannot read breaks the answer off: never a
      // complete-looking answer without its divergences. The CSV's header and the workbook's first
      // entries are sent before the task is reached; the JSON has nothing to send before it: a 503.
      const unreadable = (format: string) => request(server, 'GET', `/api/lotes/${lote}/divergencias?format=${format}`);
      const brokenOff = async () => {
        await expect(unreadable('csv')).rejects.toThrow('terminated');
        await expect(unreadable('xlsx')).rejects.toThrow('terminated');
        const inJson = await unreadable('json');
        expect([inJson.status, inJson.json()]).toEqual([503, { erro: 'Armazenamento temporário indisponível.' }]);
      };
      // A result that cannot be opened (a link to itself: ELOOP)...
      const area = path.join(server.uploadDir, `censo-${sent[1]!.id}`);
      await rm(path.join(area, 'resultado'));
      await symlink(path.join(area, 'resultado'), path.join(area, 'resultado'));
      await brokenOff();
      // ...and one missing while its task is still recorded (a volume not mounted, another UPLOAD_DIR).
      await rm(area, { recursive: true });
      await brokenOff();
    },
    onThisMachine(120_000),
  );

  it('more than 100 returns in one request is refused whole', async () => {
    const lote = await createLote();
    const parts = Array.from({ length: 101 }, (_, i) => ({ name: `e${i}.json`, content: '{}' }));
    const answer = await send(lote, interleaved(parts));
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual({ erro: 'Envie no máximo 100 arquivos retorno por requisição.' });
    expect(await tasksOf(lote)).toEqual([]);
  });
});

describe.each(MODES)('%s mode, a small backlog', (mode: Mode) => {
  it('every file of a request counts against MAX_QUEUED_TAREFAS: three files against a limit of two are refused, two pass', async () => {
    // WORKER_CONCURRENCY 1 and a closed gate: one job runs (held), the others wait.
    const server = await startHarness(mode, { redisUrl: redis.url, env: { MAX_QUEUED_TAREFAS: '2', WORKER_CONCURRENCY: '1' } });
    server.gate.close();
    try {
      const json = await readFile(basico.retorno.json!);
      const lote = (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
        .id as string;
      const files = (n: number) => interleaved(Array.from({ length: n }, (_, i) => ({ name: `e${i}.json`, content: json })));
      const three = await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: files(3) });
      expect([three.status, three.json(), three.headers.get('retry-after')]).toEqual([
        503,
        { erro: 'Serviço sobrecarregado, tente novamente em instantes.' },
        '30',
      ]);
      const two = await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: files(2) });
      expect(two.status).toBe(202);
      // One of the two runs (held by the gate), one waits: room for one more file, not for two.
      await waitForTarefa(server, (monitors(two)[0] as { id: string }).id, (m) => m.estado === 'processando');
      const again = await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: files(2) });
      expect(again.status).toBe(503);
      const one = await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: files(1) });
      expect(one.status).toBe(202);
    } finally {
      server.gate.open();
      await server.dispose();
    }
  });
});

describe('queue mode, a rolling upgrade', () => {
  it("a task an API from before the tasks' own queue put on the synchronous queue (with a priority) still runs and concludes", async () => {
    const server = await startHarness('queue', { redisUrl: redis.url });
    const { Queue } = await import('bullmq');
    const queue = new Queue(JOB_QUEUE, { connection: { url: redis.url }, prefix: server.config.queuePrefix });
    try {
      const { service } = server.app.tarefas;
      const id = randomUUID();
      const area = server.storage.area(id);
      await area.open();
      const content = await readFile(basico.retorno.json!);
      await area.write('retorno.json', Readable.from([content]), { bytes: 0 }, new AbortController().signal);
      const created = await service.createTarefas(
        [
          waitingTarefa(id, {
            arquivos: [{ campo: 'retorno', nome: 'retorno.json', bytes: content.length, sha256: '' }],
            entradas: ['retorno.json'],
          }),
        ],
        null,
      );
      expect(created.ok).toBe(true);
      // What the API before it did: the synchronous queue, priority 10, the task's id as job id.
      const data = {
        kind: 'divergencias',
        retorno: { path: area.ref('retorno.json'), format: 'json' },
        format: 'json',
        resultPath: area.ref('resultado'),
      };
      await queue.add('divergencias', withContract(data as JobData), { ...JOB_OPTIONS, priority: 10, jobId: id });
      expect((await waitForTarefa(server, id)).estado).toBe('concluida');
      expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).json().divergencias).toEqual(DIVERGENCIAS);
      // Its job is forgotten once its end is recorded, as a task's own.
      await expect.poll(async () => queue.getJobState(id), { timeout: onThisMachine(5_000) }).toBe('unknown');
    } finally {
      await queue.close();
      await server.dispose();
    }
  });
});

describe('queue mode, a burst of task ends', () => {
  it(
    'two API replicas recording the ends of 200 tasks of one batch at once: every end counted once, the batch concluded',
    async () => {
      const logLines: Record<string, unknown>[] = [];
      const a = await startHarness('queue', { redisUrl: redis.url, logLines, env: { LOG_LEVEL: 'warn' } });
      const b = await startHarness('queue', { redisUrl: redis.url, sameAs: a, logLines, env: { LOG_LEVEL: 'warn' } });
      try {
        const json = await readFile(basico.retorno.json!);
        const lote = (await request(a, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
          .id as string;
        a.gate.close();
        for (let i = 0; i < 4; i++) {
          const parts = Array.from({ length: 50 }, (_, k) => ({
            referencia: `e${i * 50 + k}`,
            name: `e${i * 50 + k}.json`,
            content: json,
          }));
          expect((await request(i % 2 ? b : a, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: interleaved(parts) })).status).toBe(
            202,
          );
        }
        await request(a, 'POST', `/api/lotes/${lote}/fechar`);
        // Every job held, then let go at once: their ends reach both replicas together.
        a.gate.open();
        let monitor: Record<string, unknown> = {};
        for (let i = 0; i < 600 && monitor.estado !== 'concluido'; i++) {
          monitor = (await request(i % 2 ? b : a, 'GET', `/api/lotes/${lote}`)).json();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(monitor).toMatchObject({
          estado: 'concluido',
          tarefas: { total: 200, concluida: 200, falhou: 0, aguardando: 0, processando: 0 },
        });
        expect(logLines.filter((line) => String(line.msg).includes('contention'))).toEqual([]);
      } finally {
        a.gate.open();
        await b.dispose();
        await a.dispose();
      }
    },
    onThisMachine(120_000),
  );

  // Issue 47: an API records from the queue's events only the ends of the tasks it queued. One
  // whose API is gone before they run must still end: the other replica's reconciler records them.
  it(
    'tasks queued by a replica that is gone before they run: the other replica records their ends, and the batch concludes',
    async () => {
      const logLines: Record<string, unknown>[] = [];
      const a = await startHarness('queue', { redisUrl: redis.url, logLines, env: { LOG_LEVEL: 'warn' } });
      const b = await startHarness('queue', { redisUrl: redis.url, sameAs: a, logLines, env: { LOG_LEVEL: 'warn' } });
      let bGone = false;
      try {
        const json = await readFile(basico.retorno.json!);
        const lote = (await request(a, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json()
          .id as string;
        a.gate.close();
        const parts = Array.from({ length: 3 }, (_, k) => ({ referencia: `e${k}`, name: `e${k}.json`, content: json }));
        expect((await request(b, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body: interleaved(parts) })).status).toBe(202);
        await request(a, 'POST', `/api/lotes/${lote}/fechar`);
        await b.dispose();
        bGone = true;
        a.gate.open();
        let monitor: Record<string, unknown> = {};
        for (let i = 0; i < 300 && monitor.estado !== 'concluido'; i++) {
          monitor = (await request(a, 'GET', `/api/lotes/${lote}`)).json();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(monitor).toMatchObject({
          estado: 'concluido',
          tarefas: { total: 3, concluida: 3, falhou: 0, aguardando: 0, processando: 0 },
        });
      } finally {
        a.gate.open();
        if (!bGone) await b.dispose();
        await a.dispose();
      }
    },
    onThisMachine(60_000),
  );
});
