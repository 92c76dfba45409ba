// SPEC §7.3 batches over HTTP, the same suite in embedded and queue mode: creation, files with a
// referencia, counts by state, `fechar`, the task list's keyset cursor, the combined divergences
// as JSON, CSV and XLSX, DELETE, the 24 h idle close and the batch's retention.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith, type UploadFile } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import {
  MODES,
  areaFiles,
  monitor,
  request,
  startHarness,
  uniqueName,
  waitForTarefa,
  workbookSheets,
  type Answer,
  type Harness,
  type Mode,
} from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const utf8 = fixtureCases().find((c) => c.name === 'basico-utf8')!;
const retorno = (name = 'retorno.json', path = basico.retorno.json): UploadFile => ({ field: 'retorno', path, filename: name });
const txt: UploadFile = { field: 'txt', path: basico.txt, filename: 'censo.txt' };
const unreadable: UploadFile = { field: 'retorno', content: 'not json', filename: 'quebrado.json' };
const DIVERGENCIAS = (basico.expectedDivergencias as { divergencias: Record<string, unknown>[] }).divergencias;
const DIVERGENCIAS_UTF8 = (utf8.expectedDivergencias as { divergencias: Record<string, unknown>[] }).divergencias;
const COLUMNS = ['referencia', 'arquivo', 'codigo_na_escola', 'linha', 'campo', 'enviado', 'correto', 'is_filiacao', 'chave', 'correcao'];
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const LOTE_KEYS = ['concluido_em', 'criado_em', 'estado', 'expira_em', 'fechado_em', 'id', 'nome', 'tarefas'];

const redis = useTestRedis();

async function createLote(
  server: Harness,
  body: unknown = { nome: `lote ${uniqueName()}` },
  headers: Record<string, string> = {},
): Promise<Answer> {
  return request(server, 'POST', '/api/lotes', {
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

async function send(
  server: Harness,
  lote: string,
  rota: string,
  files: readonly UploadFile[],
  referencia?: string,
  headers: Record<string, string> = {},
) {
  return request(server, 'POST', `/api/lotes/${lote}/${rota}`, {
    body: await formWith(files, referencia === undefined ? {} : { referencia }),
    headers,
  });
}

const loteOf = async (server: Harness, id: string) => (await request(server, 'GET', `/api/lotes/${id}`)).json();

async function waitForLote(server: Harness, id: string, estado = 'concluido') {
  await waitFor(async () => (await loteOf(server, id)).estado === estado, { timeoutMs: onThisMachine(20_000), what: `batch ${estado}` });
  return loteOf(server, id);
}

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  const logLines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url, logLines });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  describe('POST /api/lotes', () => {
    it('201 with Location and the monitor of an open, empty batch', async () => {
      const answer = await createLote(server, { nome: 'Regional Norte' });
      expect(answer.status).toBe(201);
      const lote = answer.json();
      expect(Object.keys(lote).sort()).toEqual(LOTE_KEYS);
      expect(answer.headers.get('location')).toBe(`/api/lotes/${lote.id}`);
      expect(lote).toMatchObject({
        nome: 'Regional Norte',
        estado: 'aberto',
        fechado_em: null,
        concluido_em: null,
        expira_em: null,
        tarefas: { total: 0, aguardando: 0, processando: 0, concluida: 0, falhou: 0, cancelada: 0 },
      });
      expect(lote.criado_em).toMatch(RFC3339);
      expect(await loteOf(server, lote.id as string)).toEqual(lote);
    });

    it('a body that is not JSON is a 400 about JSON', async () => {
      const form = await request(server, 'POST', '/api/lotes', {
        body: 'nome=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(form.status).toBe(400);
      expect(form.json()).toEqual({ erro: 'O corpo deve ser um objeto JSON (campos opcionais nome e webhook).' });
    });

    it('without a body, or with {}, the name is null', async () => {
      const empty = await request(server, 'POST', '/api/lotes');
      expect(empty.status).toBe(201);
      expect(empty.json().nome).toBeNull();
      expect((await createLote(server, {})).json().nome).toBeNull();
    });

    it('with a webhook, the creation answer alone carries webhook_segredo (whsec_ + base64 of 32 bytes)', async () => {
      const answer = await createLote(server, { nome: 'com webhook', webhook: 'http://127.0.0.1:9/ganchos' });
      expect(answer.status).toBe(201);
      const segredo = answer.json().webhook_segredo as string;
      expect(segredo).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(segredo.slice(6), 'base64')).toHaveLength(32);
      const again = await loteOf(server, answer.json().id as string);
      expect(again.webhook_segredo).toBeUndefined();
      expect(JSON.stringify(again)).not.toContain(segredo);
    });

    it.each([
      ['not JSON', '{nome:', 'O corpo deve ser um objeto JSON (campos opcionais nome e webhook).'],
      ['an array', '[]', 'O corpo deve ser um objeto JSON (campos opcionais nome e webhook).'],
      ['a name that is not text', { nome: 7 }, 'Campo nome deve ser um texto de até 200 caracteres.'],
      ['a name too long', { nome: 'x'.repeat(201) }, 'Campo nome deve ser um texto de até 200 caracteres.'],
      ['a webhook that is not a URL', { webhook: 'ganchos' }, 'Webhook inválido: URL malformada.'],
      ['a webhook that is not http(s)', { webhook: 'ftp://example.com/x' }, 'Webhook inválido: a URL deve usar https.'],
    ])('%s is a 400 with its message', async (_what, body, erro) => {
      const answer = await createLote(server, body);
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({ erro });
    });

    it('Idempotency-Key: the same body is the same batch (201, Idempotent-Replayed, its secret), another body 422', async () => {
      const key = `pasta-${uniqueName()}`;
      const body = { nome: 'retornos 2025', webhook: 'http://127.0.0.1:9/x' };
      const first = await createLote(server, body, { 'idempotency-key': key });
      const logged = logLines.length;
      const again = await createLote(server, body, { 'idempotency-key': key });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.json()).toEqual(first.json());
      // The replay is answered once: the handler went on to create a batch and answer a second
      // time ("Reply was already sent") when it took the sent reply for "no replay".
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(logLines.slice(logged).filter((line) => (line.level as number) >= 40)).toEqual([]);
      const other = await createLote(server, { nome: 'outro' }, { 'idempotency-key': key });
      expect(other.status).toBe(422);
      expect(other.json()).toEqual({ erro: 'Idempotency-Key já usada com outra requisição.' });
    });
  });

  describe('files, counts and fechar', () => {
    it('a file with its referencia becomes a task of the batch; the counts follow the states; fechar ends it when the tasks end', async () => {
      const lote = (await createLote(server)).json().id as string;
      server.gate.close();
      try {
        const ids: string[] = [];
        for (const [i, route] of ['divergencias-rf', 'divergencias-rf', 'retorno-rf'].entries()) {
          const answer = await send(server, lote, route, route === 'retorno-rf' ? [retorno(), txt] : [retorno()], `escola-${i}`);
          expect(answer.status).toBe(202);
          expect(answer.headers.get('location')).toBe(`/api/tarefas/${answer.json().id}`);
          expect(answer.json()).toMatchObject({ lote, referencia: `escola-${i}`, rota: route, estado: 'aguardando', expira_em: null });
          ids.push(answer.json().id as string);
        }
        for (const id of ids.slice(0, 2)) await waitForTarefa(server, id, (m) => m.estado === 'processando');
        const busy = await request(server, 'GET', `/api/lotes/${lote}`);
        expect(busy.json().tarefas).toEqual({ total: 3, aguardando: 1, processando: 2, concluida: 0, falhou: 0, cancelada: 0 });
        expect(busy.json().estado).toBe('aberto');
        expect(Number(busy.headers.get('retry-after'))).toBeGreaterThan(0);

        const closed = await request(server, 'POST', `/api/lotes/${lote}/fechar`);
        expect(closed.status).toBe(200);
        expect(closed.json()).toMatchObject({ estado: 'processando', concluido_em: null });
        expect(closed.json().fechado_em).toMatch(RFC3339);
        const late = await send(server, lote, 'divergencias-rf', [retorno()], 'tarde');
        expect(late.status).toBe(409);
        expect(late.json()).toEqual({ erro: 'Lote fechado.' });
        // fechar again changes nothing.
        expect((await request(server, 'POST', `/api/lotes/${lote}/fechar`)).json().fechado_em).toBe(closed.json().fechado_em);

        server.gate.open();
        const done = await waitForLote(server, lote);
        expect(done.tarefas).toEqual({ total: 3, aguardando: 0, processando: 0, concluida: 3, falhou: 0, cancelada: 0 });
        expect(Date.parse(done.expira_em as string) - Date.parse(done.concluido_em as string)).toBe(24 * 3_600_000);
        expect((await request(server, 'GET', `/api/lotes/${lote}`)).headers.get('retry-after')).toBeNull();
        // A batch's task lives as long as its batch.
        expect((await monitor(server, ids[0]!)).expira_em).toBe(done.expira_em);
      } finally {
        server.gate.open();
      }
    });

    it('failed tasks are counted; an empty batch closed is concluded at once', async () => {
      const lote = (await createLote(server)).json().id as string;
      const bad = (await send(server, lote, 'divergencias-rf', [unreadable], 'x')).json().id as string;
      expect((await waitForTarefa(server, bad)).estado).toBe('falhou');
      await request(server, 'POST', `/api/lotes/${lote}/fechar`);
      expect((await waitForLote(server, lote)).tarefas).toMatchObject({ total: 1, falhou: 1, concluida: 0 });

      const empty = (await createLote(server)).json().id as string;
      const closed = await request(server, 'POST', `/api/lotes/${empty}/fechar`);
      expect(closed.json()).toMatchObject({ estado: 'concluido', tarefas: { total: 0 } });
    });

    it('the route checks of the synchronous route apply; an unknown batch is 404 Lote não encontrado.', async () => {
      const lote = (await createLote(server)).json().id as string;
      const missing = await send(server, lote, 'retorno-rf', [retorno()]);
      expect(missing.status).toBe(400);
      expect(missing.json()).toEqual({ erro: 'Arquivo ausente: envie o campo txt.' });
      const long = await send(server, lote, 'divergencias-rf', [retorno()], 'r'.repeat(256));
      expect(long.status).toBe(400);
      expect(long.json()).toEqual({ erro: 'Campo referencia deve ter até 255 caracteres.' });
      for (const id of ['5f0c1d5e-0000-4000-8000-000000000000', 'nao-e-um-id']) {
        const answer = await send(server, id, 'divergencias-rf', [retorno()]);
        expect(answer.status).toBe(404);
        expect(answer.json()).toEqual({ erro: 'Lote não encontrado.' });
        for (const [method, path] of [
          ['GET', ''],
          ['GET', '/tarefas'],
          ['GET', '/divergencias'],
          ['POST', '/fechar'],
          ['DELETE', ''],
        ] as const) {
          const other = await request(server, method, `/api/lotes/${id}${path}`);
          expect(other.status, `${method} ${path}`).toBe(404);
          expect(other.json()).toEqual({ erro: 'Lote não encontrado.' });
        }
      }
      expect((await monitor(server, (await send(server, lote, 'divergencias-rf', [retorno()])).json().id as string)).referencia).toBeNull();
    });

    it('Idempotency-Key is per batch, and a replay answers even after the batch closed', async () => {
      const [a, b] = [(await createLote(server)).json().id as string, (await createLote(server)).json().id as string];
      const key = 'sha256-do-arquivo';
      const inA = await send(server, a, 'divergencias-rf', [retorno()], 'e1', { 'idempotency-key': key });
      const inB = await send(server, b, 'divergencias-rf', [retorno()], 'e1', { 'idempotency-key': key });
      expect(inA.status).toBe(202);
      expect(inB.status).toBe(202);
      expect(inB.json().id).not.toBe(inA.json().id);
      await request(server, 'POST', `/api/lotes/${a}/fechar`);
      const replay = await send(server, a, 'divergencias-rf', [retorno()], 'e1', { 'idempotency-key': key });
      expect(replay.status).toBe(202);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.json().id).toBe(inA.json().id);
      const otherReferencia = await send(server, b, 'divergencias-rf', [retorno()], 'e2', { 'idempotency-key': key });
      expect(otherReferencia.status).toBe(422);
    });
  });

  describe('GET /api/lotes/{id}/tarefas', () => {
    let lote: string;
    const ids: string[] = [];
    beforeAll(async () => {
      lote = (await createLote(server)).json().id as string;
      for (let i = 0; i < 5; i++) {
        const files = i === 3 ? [unreadable] : [retorno()];
        ids.push((await send(server, lote, 'divergencias-rf', files, `e${i}`)).json().id as string);
      }
      for (const id of ids) await waitForTarefa(server, id);
    });

    it('pages through the tasks in creation order with an opaque next_cursor', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 10; page++) {
        const answer = await request(server, 'GET', `/api/lotes/${lote}/tarefas?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(answer.status).toBe(200);
        const body = answer.json() as { tarefas: Array<{ id: string; lote: string }>; next_cursor: string | null };
        expect(body.tarefas.length).toBeLessThanOrEqual(2);
        for (const tarefa of body.tarefas) {
          expect(tarefa.lote).toBe(lote);
          seen.push(tarefa.id);
        }
        cursor = body.next_cursor;
        if (cursor === null) break;
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      }
      expect(seen).toEqual(ids);
    });

    it('filters by estado; the default page holds up to 100', async () => {
      const all = (await request(server, 'GET', `/api/lotes/${lote}/tarefas`)).json();
      expect((all.tarefas as unknown[]).length).toBe(5);
      expect(all.next_cursor).toBeNull();
      const failed = (await request(server, 'GET', `/api/lotes/${lote}/tarefas?estado=falhou`)).json();
      expect((failed.tarefas as Array<{ id: string }>).map((t) => t.id)).toEqual([ids[3]]);
      const done = (await request(server, 'GET', `/api/lotes/${lote}/tarefas?estado=concluida&limit=1000`)).json();
      expect((done.tarefas as unknown[]).length).toBe(4);
      // The batch's own spelling (concluido) means the same tasks.
      expect((await request(server, 'GET', `/api/lotes/${lote}/tarefas?estado=concluido&limit=1000`)).json()).toEqual(done);
    });

    it.each([
      ['estado=feito', 'Parâmetro estado deve ser aguardando, processando, concluida, falhou ou cancelada.'],
      ['limit=0', 'Parâmetro limit deve ser um número inteiro de 1 a 1000.'],
      ['limit=1001', 'Parâmetro limit deve ser um número inteiro de 1 a 1000.'],
      ['limit=abc', 'Parâmetro limit deve ser um número inteiro de 1 a 1000.'],
      ['cursor=%%%', 'Parâmetro cursor inválido.'],
      ['cursor=bm9wZQ', 'Parâmetro cursor inválido.'],
    ])('%s is a 400', async (query, erro) => {
      const answer = await request(server, 'GET', `/api/lotes/${lote}/tarefas?${query}`);
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({ erro });
    });
  });

  describe('GET /api/lotes/{id}/divergencias and /falhas of a concluded batch', () => {
    let lote: string;
    beforeAll(async () => {
      lote = (await createLote(server)).json().id as string;
      const uploads: Array<[string, UploadFile[], string]> = [
        ['divergencias-rf', [retorno('escola a.json')], 'A'],
        ['retorno-rf', [retorno(), txt], 'not a divergencias task'],
        ['divergencias-rf', [unreadable], 'failed'],
        ['divergencias-rf', [retorno('Escola B.xlsx', utf8.retorno.xlsx)], 'B'],
      ];
      for (const [route, files, referencia] of uploads) {
        const id = (await send(server, lote, route, files, referencia)).json().id as string;
        await waitForTarefa(server, id);
      }
      await request(server, 'POST', `/api/lotes/${lote}/fechar`);
      await waitForLote(server, lote);
    });

    const expected = () => [
      ...DIVERGENCIAS.map((d) => ({ referencia: 'A', arquivo: 'escola a.json', ...d })),
      ...DIVERGENCIAS_UTF8.map((d) => ({ referencia: 'B', arquivo: 'Escola B.xlsx', ...d })),
    ];
    const FALHA = {
      referencia: 'failed',
      arquivo: 'quebrado.json',
      status: 400,
      erro: 'Arquivo retorno ilegível: não é um JSON válido.',
    };

    /** Every answer says how many divergencias-rf tasks concluded and failed (SPEC §7.3), and is not cached. */
    const expectCounts = (answer: Answer) => {
      expect(answer.headers.get('lote-tarefas-concluidas')).toBe('2');
      expect(answer.headers.get('lote-tarefas-falhas')).toBe('1');
      expect(answer.headers.get('lote-estado')).toBeNull();
      expect(answer.headers.get('cache-control')).toBe('no-store');
    };

    it('json: every divergence of the concluded divergencias-rf tasks, in creation order, with referencia and arquivo first; the failed file in falhas', async () => {
      const answer = await request(server, 'GET', `/api/lotes/${lote}/divergencias`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expectCounts(answer);
      const body = answer.json() as { divergencias: Record<string, unknown>[]; falhas: unknown[] };
      expect(Object.keys(body)).toEqual(['divergencias', 'falhas']);
      expect(body.divergencias).toEqual(expected());
      expect(Object.keys(body.divergencias[0]!)).toEqual(COLUMNS);
      expect(body.falhas).toEqual([FALHA]);
    });

    it('csv: a header of referencia, arquivo and the §3.1 columns, one line per divergence', async () => {
      const answer = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`);
      expect(answer.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(answer.headers.get('content-disposition')).toBe('attachment; filename="divergencias.csv"');
      expectCounts(answer);
      const lines = answer.bytes.toString('utf8').split('\r\n');
      expect(lines[0]).toBe(COLUMNS.join(','));
      expect(lines.length - 2).toBe(expected().length);
      expect(lines[1]!.startsWith('A,escola a.json,')).toBe(true);
    });

    it('xlsx: the divergences in words, then the failed files on a sheet Falhas', async () => {
      const answer = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=xlsx`);
      expect(answer.headers.get('content-type')).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
      expectCounts(answer);
      const sheets = await workbookSheets(answer.bytes);
      expect(sheets.map((sheet) => sheet.name)).toEqual(['divergencias', 'Falhas']);
      const [sheet, falhas] = sheets;
      // For people (SPEC §3.5, session 4): the same columns in the same order, in words.
      expect(sheet!.rows[0]).toEqual([
        'Referência',
        'Arquivo',
        'Código na escola',
        'Linha no txt',
        'Campo no retorno',
        'Valor enviado',
        'Valor da Receita Federal',
        'Filiação',
        'Dado',
        'No arquivo corrigido',
        'Como corrigir',
        'O que fazer',
      ]);
      expect(sheet!.rows.length - 1).toBe(expected().length);
      const byRow = sheet!.rows.slice(1);
      expected().forEach((item, i) => {
        const d = item as Record<string, unknown>;
        expect(byRow[i]!.slice(0, 7)).toEqual(
          [d.referencia, d.arquivo, d.codigo_na_escola, d.linha, d.campo, d.enviado, d.correto].map(String),
        );
        expect(byRow[i]![7]).toBe(d.is_filiacao ? 'Sim' : 'Não');
      });
      expect(new Set(byRow.map((row) => row[9]))).toEqual(new Set(['Sim', 'Não']));
      // How each gets fixed, in words (SPEC §11), and 'Sim' exactly for what the corrected file writes.
      const como = {
        arquivo: 'Arquivo corrigido',
        educacenso: 'Já no Educacenso',
        formulario: 'Formulário do Educacenso',
        receita: 'Cidadão na Receita Federal',
        grafia: 'Só grafia',
      };
      expected().forEach((item, i) => {
        const correcao = (item as unknown as { correcao: keyof typeof como }).correcao;
        const escrita = correcao === 'arquivo' || correcao === 'educacenso';
        expect([byRow[i]![9], byRow[i]![10]]).toEqual([escrita ? 'Sim' : 'Não', como[correcao]]);
        expect(byRow[i]![11]).toMatch(/\.$/);
      });
      expect(falhas!.rows).toEqual([
        // For people: no HTTP status (the CSV and JSON keep `status`).
        ['Referência', 'Arquivo', 'Erro'],
        [FALHA.referencia, FALHA.arquivo, FALHA.erro],
      ]);
    });

    it('every export is a download with a file name, json included', async () => {
      for (const [route, name] of [
        ['divergencias', 'divergencias'],
        ['falhas', 'falhas'],
        ['resumo', 'resumo'],
      ]) {
        for (const format of ['json', 'csv', 'xlsx']) {
          const answer = await request(server, 'GET', `/api/lotes/${lote}/${route}?format=${format}`);
          expect([route, format, answer.headers.get('content-disposition')]).toEqual([
            route,
            format,
            `attachment; filename="${name}.${format}"`,
          ]);
        }
      }
    });

    it('/falhas lists the failed files alone, as json and csv', async () => {
      const json = await request(server, 'GET', `/api/lotes/${lote}/falhas`);
      expect(json.status).toBe(200);
      expectCounts(json);
      expect(json.json()).toEqual({ falhas: [FALHA] });
      const csv = await request(server, 'GET', `/api/lotes/${lote}/falhas?format=csv`);
      expect(csv.headers.get('content-disposition')).toBe('attachment; filename="falhas.csv"');
      expect(csv.bytes.toString('utf8')).toBe(`referencia,arquivo,status,erro\r\nfailed,quebrado.json,400,${FALHA.erro}\r\n`);
    });

    it('format other than json, csv or xlsx is a 400, and so is a parcial other than true or false', async () => {
      const answer = await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=ods`);
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({ erro: 'Parâmetro format deve ser json, csv ou xlsx.' });
      const parcial = await request(server, 'GET', `/api/lotes/${lote}/falhas?parcial=sim`);
      expect(parcial.status).toBe(400);
      expect(parcial.json()).toEqual({ erro: 'Parâmetro parcial deve ser true ou false.' });
    });
  });

  describe('a batch not yet concluded is never answered as if it were whole', () => {
    it('409 Lote ainda não concluído. with Retry-After and the counts until concluido; ?parcial=true answers what is done, with Lote-Estado', async () => {
      const lote = (await createLote(server)).json().id as string;
      const done = (await send(server, lote, 'divergencias-rf', [retorno('escola a.json')], 'A')).json().id as string;
      await waitForTarefa(server, done);
      const failed = (await send(server, lote, 'divergencias-rf', [unreadable], 'X')).json().id as string;
      await waitForTarefa(server, failed);
      server.gate.close();
      try {
        const held = (await send(server, lote, 'divergencias-rf', [retorno('escola b.json')], 'B')).json().id as string;
        for (const route of ['divergencias', 'falhas']) {
          const refused = await request(server, 'GET', `/api/lotes/${lote}/${route}`);
          expect(refused.status).toBe(409);
          expect(refused.json()).toEqual({ erro: 'Lote ainda não concluído.' });
          expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(refused.headers.get('lote-tarefas-concluidas')).toBe('1');
          expect(refused.headers.get('lote-tarefas-falhas')).toBe('1');
        }
        const partial = await request(server, 'GET', `/api/lotes/${lote}/divergencias?parcial=true`);
        expect(partial.status).toBe(200);
        expect(partial.headers.get('lote-estado')).toBe('aberto');
        const body = partial.json() as { divergencias: Array<{ referencia: string }>; falhas: Array<{ referencia: string }> };
        expect(new Set(body.divergencias.map((d) => d.referencia))).toEqual(new Set(['A']));
        expect(body.falhas.map((f) => f.referencia)).toEqual(['X']);
        // Closed with a task still running: processando, still refused without parcial.
        await request(server, 'POST', `/api/lotes/${lote}/fechar`);
        expect((await request(server, 'GET', `/api/lotes/${lote}/divergencias?parcial=true`)).headers.get('lote-estado')).toBe(
          'processando',
        );
        expect((await request(server, 'GET', `/api/lotes/${lote}/divergencias`)).status).toBe(409);
        server.gate.open();
        await waitForTarefa(server, held);
        await waitForLote(server, lote);
        const whole = await request(server, 'GET', `/api/lotes/${lote}/divergencias`);
        expect(whole.status).toBe(200);
        expect(whole.headers.get('lote-tarefas-concluidas')).toBe('2');
        expect(new Set((whole.json() as { divergencias: Array<{ referencia: string }> }).divergencias.map((d) => d.referencia))).toEqual(
          new Set(['A', 'B']),
        );
      } finally {
        server.gate.open();
      }
    });
  });

  describe('DELETE /api/lotes/{id}', () => {
    it('cancels the unfinished tasks and deletes every task, file and the batch', async () => {
      const lote = (await createLote(server)).json().id as string;
      server.gate.close();
      try {
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) ids.push((await send(server, lote, 'divergencias-rf', [retorno()], `e${i}`)).json().id as string);
        await waitForTarefa(server, ids[0]!, (m) => m.estado === 'processando');
        const running = server.gate.seen.find((job) => job.area === ids[0])!;
        const answer = await request(server, 'DELETE', `/api/lotes/${lote}`);
        expect(answer.status).toBe(204);
        expect(running.signal?.aborted).toBe(true);
        for (const id of ids) {
          expect((await request(server, 'GET', `/api/tarefas/${id}`)).status).toBe(404);
          expect(await areaFiles(server, id)).toBeNull();
        }
        expect((await request(server, 'GET', `/api/lotes/${lote}`)).json()).toEqual({ erro: 'Lote não encontrado.' });
        expect((await request(server, 'DELETE', `/api/lotes/${lote}`)).status).toBe(404);
      } finally {
        server.gate.open();
      }
    });
  });
});

describe.each(MODES)('%s mode: idle close and retention', (mode: Mode) => {
  let clock = 0;
  let server: Harness;
  beforeAll(async () => {
    // A clock the test moves: a day goes by in a line.
    server = await startHarness(mode, { redisUrl: redis.url, now: () => Date.now() + clock, env: { RESULT_TTL_HOURS: '2' } });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('a batch left open 24 h without a new file closes itself', async () => {
    const lote = (await createLote(server)).json().id as string;
    const id = (await send(server, lote, 'divergencias-rf', [retorno()], 'x')).json().id as string;
    await waitForTarefa(server, id);
    clock += 23 * 3_600_000;
    // A new file restarts the 24 h.
    await waitForTarefa(server, (await send(server, lote, 'divergencias-rf', [retorno()], 'y')).json().id as string);
    clock += 23 * 3_600_000;
    expect((await loteOf(server, lote)).estado).toBe('aberto');
    clock += 2 * 3_600_000;
    const closed = await waitForLote(server, lote);
    expect(closed.fechado_em).toMatch(RFC3339);
    expect(closed.tarefas).toMatchObject({ total: 2, concluida: 2 });
  });

  it('RESULT_TTL_HOURS after concluido_em the batch, its tasks and their files are deleted', async () => {
    const lote = (await createLote(server)).json().id as string;
    const id = (await send(server, lote, 'divergencias-rf', [retorno()], 'x')).json().id as string;
    await waitForTarefa(server, id);
    const done = (await request(server, 'POST', `/api/lotes/${lote}/fechar`)).json();
    expect(done.estado).toBe('concluido');
    expect(Date.parse(done.expira_em as string) - Date.parse(done.concluido_em as string)).toBe(2 * 3_600_000);
    clock += 3_600_000;
    expect((await request(server, 'GET', `/api/tarefas/${id}/resultado`)).status).toBe(200);
    clock += 3_600_000 + 1_000;
    await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).status === 404, { what: 'the batch to expire' });
    await waitFor(async () => (await request(server, 'GET', `/api/tarefas/${id}`)).status === 404, { what: 'its task to go' });
    await waitFor(async () => (await areaFiles(server, id)) === null, { what: 'its files to go' });
  });
});
