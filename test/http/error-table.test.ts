// The error table of docs/integracao.md lists every `erro` the service answers: each answer below is
// provoked over HTTP as a client would, and its message (with the parts that vary written as the
// table writes them, `<n>`, `<c>`, `<motivo>`…) must be quoted in the table. errors.test.ts covers
// the error classes; this covers the messages built elsewhere (plugins, routes, message builders,
// the task and batch routes of SPEC §7).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badInput, httpMessages } from '@censo/shared';
import { invalido, mensagens } from '../../services/api/dist/tarefas/errors.js';
import { WEBHOOK_REFUSALS } from '../../services/api/dist/tarefas/webhooks.js';
import { API_KEY, formWith, post, startTestServer, type TestServer } from '../helpers/http.js';

const doc = readFileSync(new URL('../../docs/integracao.md', import.meta.url), 'utf8');
const errorsAt = doc.indexOf('\n## Erros: status e mensagens\n');
const table = errorsAt < 0 ? '' : doc.slice(errorsAt, doc.indexOf('\n## ', errorsAt + 1));

/** The message as the table quotes it: what varies replaced by the table's placeholder. */
function inTable(message: string, varying: Record<string, string> = {}): string {
  let text = message;
  for (const [value, placeholder] of Object.entries(varying)) text = text.replace(value, placeholder);
  return text;
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

const retorno = (row: Record<string, string>) =>
  JSON.stringify([{ Registro: '30', 'Código na Escola': 'ALU1', Campo: 'CPF', Mensagem: 'Receita Federal', Conteúdo: '1 -- 2', ...row }]);

describe('every answer the service gives is in the error table of docs/integracao.md', () => {
  it('404 for a route that does not exist', async () => {
    const response = await fetch(`${server.url}/nada`);
    expect(response.status).toBe(404);
    const { erro } = (await response.json()) as { erro: string };
    expect(table).toContain(`| 404 | \`${erro}\``);
  });

  it('400 for a format the upload routes do not write', async () => {
    const res = await post(
      server,
      '/api/divergencias-rf?format=pdf',
      await formWith([{ field: 'retorno', content: '[]', filename: 'r.json' }]),
    );
    expect(res.status).toBe(400);
    expect(table).toContain(`\`${(res.body as { erro: string }).erro}\``);
  });

  it('400 for several returns to a batch with referencias that do not pair up, or over 100 of them', async () => {
    const headers = { 'x-api-key': API_KEY };
    const lote = (await post(server, '/api/lotes', '{}', { ...headers, 'content-type': 'application/json' })).body as { id: string };
    const form = (n: number, referencias: number) => {
      const body = new FormData();
      for (let i = 0; i < referencias; i++) body.append('referencia', `r${i}`);
      for (let i = 0; i < n; i++) body.append('retorno', new Blob(['[]']), `r${i}.json`);
      return body;
    };
    for (const body of [form(2, 1), form(101, 0)]) {
      const res = await post(server, `/api/lotes/${lote.id}/divergencias-rf`, body);
      expect(res.status).toBe(400);
      expect(table).toContain(`| 400 | \`${(res.body as { erro: string }).erro}\``);
    }
  });

  it('400 for too many form fields', async () => {
    const fields = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`campo${i}`, 'x']));
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', content: '[]', filename: 'r.json' }], fields),
    );
    expect(res.status).toBe(400);
    expect(table).toContain(`\`${(res.body as { erro: string }).erro}\``);
  });

  it('422 quoting the code when the return has no line column', async () => {
    const res = await post(
      server,
      '/api/retorno-rf',
      await formWith([
        { field: 'retorno', content: retorno({}), filename: 'r.json' },
        { field: 'txt', content: '00|1\n30|1|OUTRO|||ANA|01/01/2010|1|M|P\n', filename: 'c.txt' },
      ]),
    );
    expect(res.status).toBe(422);
    expect(table).toContain(`\`${inTable((res.body as { erro: string }).erro, { ALU1: '<c>' })}\``);
  });

  it('400 for a census txt that is not text (UTF-16 cut inside a character)', async () => {
    const res = await post(
      server,
      '/api/retorno-rf',
      await formWith([
        { field: 'retorno', content: retorno({ Linha: '2' }), filename: 'r.json' },
        { field: 'txt', content: Buffer.from('\ufeff00|1\r\n30|1|ALU1\r\n!', 'utf16le').subarray(0, -1), filename: 'c.txt' },
      ]),
    );
    expect(res.status).toBe(400);
    const { erro } = res.body as { erro: string };
    expect(table).toContain(`\`${inTable(erro, { [erro.slice(erro.indexOf(': ') + 2)]: '<motivo>' })}\``);
  });

  it('the fixed messages and the 400 builders', () => {
    for (const message of Object.values(httpMessages)) expect(table).toContain(`\`${message}\``);
    const built = [
      badInput.notMultipart().message,
      badInput.fileMissing('retorno').message,
      badInput.malformedMultipart().message,
      badInput.outOfMemory().message,
      inTable(badInput.unexpectedField('x').message, { x: '<campo>' }),
      inTable(badInput.duplicateField('x').message, { x: '<campo>' }),
      inTable(badInput.unreadableRetorno('m').message, { m: '<motivo>' }),
      inTable(badInput.unreadableTxt('m').message, { m: '<motivo>' }),
      badInput.wrongExtension('retorno').message,
      badInput.wrongExtension('txt').message,
    ];
    for (const message of built) expect(table).toContain(message);
  });

  it('the task and batch messages (SPEC §7, §10), and every reason a webhook is refused', () => {
    for (const message of Object.values(mensagens)) expect(table).toContain(`\`${message}\``);
    for (const [name, build] of Object.entries(invalido)) {
      expect(table, name).toContain(`\`${build('<motivo>').message}\``);
    }
    for (const motivo of Object.values(WEBHOOK_REFUSALS)) expect(table).toContain(`\`${motivo}\``);
  });

  it.each([
    // Answered where no test here reaches easily (a queue dashboard, multipart limits that an
    // earlier check always meets first, a client that is gone, a query declared wrong).
    'Credencial inválida (BULL_BOARD_TOKEN).',
    'Arquivos demais na requisição.',
    'Nome de campo não permitido.',
    'A requisição terminou antes do fim do envio.',
    'Parâmetros inválidos: <detalhe>',
    'Consulta mal declarada: <q> (veja o log do serviço).',
  ])('%s', (message) => {
    expect(table).toContain(`\`${message}\``);
  });
});
