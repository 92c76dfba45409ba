// GET /api/lotes/{id}/correcoes?formato=ieducar[&parte=] (issues 46, 56, 59): the i-Educar files
// of a batch's divergences, the preview by default and the correction on request, from the same
// items GET /api/lotes/{id}/divergencias answers; downloads named for the batch and never cached;
// the batch's rules (404 for an unknown batch, 409 before it is concluded), a 400 for any other
// formato or parte, and a 503 beyond the scripts one process writes at once. The service is the
// real one, in embedded mode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ieducarScriptText, type IeducarDivergencia } from '@censo/shared';
import { SCRIPTS_AO_MESMO_TEMPO, scriptsEmAndamento, scriptsLimite } from '../../services/api/dist/routes/correcoes.js';
import { formWith, startTestServer, type TestServer } from '../helpers/http.js';
import { request } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const row = (codigo: string, campo: string, conteudo: string, mensagem = 'O campo não está de acordo com a base da Receita Federal.') => ({
  Registro: '30',
  Linha: '2',
  'Código na Escola': codigo,
  Campo: campo,
  Mensagem: mensagem,
  Conteúdo: conteudo,
});

/** Two schools' returns: numeric codes (i-Educar's idpes), one that is not, a filiation. */
const ESCOLA_A = JSON.stringify([
  row('101', 'Nome completo', "MARIA DAVILA -- MARIA D'ÁVILA SOUZA"),
  row('101', 'Data de nascimento', '14/03/2014 -- 15/03/2014'),
  // Another person: with 101's name and birth date, rule 25 would keep 101's out of the file.
  { ...row('103', 'Filiação 1', 'ANA SOUZA -- ANA DE SOUZA'), Linha: '3' },
]);
const ESCOLA_B = JSON.stringify([
  row('102', 'Identificação única (Inep)', '222222222222 -- 222222222223', 'O código informado diverge da base da Receita Federal.'),
  row('ALU9', 'Nome completo', 'JOSE LIMA -- JOSE DE LIMA'),
]);

let server: TestServer;
let url: string;

beforeAll(async () => {
  server = await startTestServer();
  url = server.url;
});

afterAll(async () => {
  await server?.dispose();
});

async function createLote(): Promise<string> {
  const answer = await request({ url }, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } });
  expect(answer.status).toBe(201);
  return answer.json().id as string;
}

async function send(lote: string, content: string, filename: string, referencia: string) {
  const answer = await request({ url }, 'POST', `/api/lotes/${lote}/divergencias-rf`, {
    body: await formWith([{ field: 'retorno', content, filename }], { referencia }),
  });
  expect(answer.status).toBe(202);
}

async function concluded(lote: string) {
  await request({ url }, 'POST', `/api/lotes/${lote}/fechar`);
  await waitFor(async () => (await request({ url }, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', {
    timeoutMs: onThisMachine(20_000),
    what: 'batch concluido',
  });
}

describe('GET /api/lotes/{id}/correcoes', () => {
  it('answers the script of every divergence of the batch, as a download never cached', async () => {
    const lote = await createLote();
    await send(lote, ESCOLA_A, 'escola-a.json', '35000001');
    await send(lote, ESCOLA_B, 'escola-b.json', '35000002');
    await concluded(lote);

    // The same items the batch's divergences answer, written by the same generator.
    const listed = (await request({ url }, 'GET', `/api/lotes/${lote}/divergencias`)).json().divergencias as IeducarDivergencia[];
    expect(listed).toHaveLength(5);
    const options = { userName: 'censo-api', origin: `censo-api lote ${lote}`, lote };

    for (const [query, parte] of [
      ['', 'previa'],
      ['&parte=previa', 'previa'],
      ['&parte=correcao', 'correcao'],
    ] as const) {
      const answer = await request({ url }, 'GET', `/api/lotes/${lote}/correcoes?formato=ieducar${query}`);
      expect(answer.status, query).toBe(200);
      expect(answer.headers.get('content-type')).toBe('application/sql; charset=utf-8');
      expect(answer.headers.get('content-disposition')).toBe(`attachment; filename="ieducar-lote-${lote}-${parte}.sql"`);
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('lote-tarefas-concluidas')).toBe('2');
      const script = answer.bytes.toString('utf8');
      expect(script).toBe(await ieducarScriptText(parte, listed, options));
      expect(script).toContain("(1, 101, 'nome', 'MARIA DAVILA', 'MARIA D''ÁVILA SOUZA'");
      expect(script).toContain("'35000001 / escola-a.json'");
      expect(script).toMatch(/^-- {3}\[35000002 \/ escola-b\.json\] código "ALU9".*não é um idpes do i-Educar/m);
      expect(script).toMatch(/^-- {3}\[35000001 \/ escola-a\.json\] código "103".*Filiação 1.*corrija só no sistema da escola/m);
      expect(script).toContain(`-- Lote ${lote}: a escola e o retorno de cada correção estão na coluna "origem".`);
      if (parte === 'correcao') expect(script.trimEnd().endsWith('COMMIT;')).toBe(true);
      else expect(script).not.toMatch(/^COMMIT;/m);
    }
    expect(scriptsEmAndamento()).toBe(0);
  });

  it(`at most ${SCRIPTS_AO_MESMO_TEMPO} scripts at once: beyond, a 503 with Retry-After; each slot is freed when its answer ends`, async () => {
    const lote = await createLote();
    await send(lote, ESCOLA_A, 'escola-a.json', '35000001');
    await concluded(lote);
    const path = `/api/lotes/${lote}/correcoes?formato=ieducar`;
    // The process at its bound (tests lower it: holding answers open takes scripts larger than the sockets' buffers).
    scriptsLimite.aoMesmoTempo = 0;
    try {
      const busy = await request({ url }, 'GET', path);
      expect(busy.status).toBe(503);
      expect(busy.json()).toEqual({ erro: 'Scripts do i-Educar demais em andamento, tente novamente em instantes.' });
      expect(busy.headers.get('retry-after')).not.toBeNull();
      scriptsLimite.aoMesmoTempo = 1;
      // Answered whole, read or not, then the slot is free for the next.
      for (let i = 0; i < 3; i++) {
        expect((await request({ url }, 'GET', path)).status).toBe(200);
        await waitFor(async () => scriptsEmAndamento() === 0, { timeoutMs: onThisMachine(10_000), what: 'the slot freed' });
      }
    } finally {
      scriptsLimite.aoMesmoTempo = SCRIPTS_AO_MESMO_TEMPO;
    }
    expect(scriptsEmAndamento()).toBe(0);
  });

  it('409 before the batch is concluded, 404 for an unknown batch, 400 for any other formato', async () => {
    const lote = await createLote();
    await send(lote, ESCOLA_A, 'escola-a.json', 'x');
    const open = await request({ url }, 'GET', `/api/lotes/${lote}/correcoes?formato=ieducar`);
    expect(open.status).toBe(409);
    expect(open.json()).toEqual({ erro: 'Lote ainda não concluído.' });
    expect(open.headers.get('retry-after')).not.toBeNull();

    const unknown = await request({ url }, 'GET', '/api/lotes/00000000-0000-4000-8000-000000000000/correcoes?formato=ieducar');
    expect(unknown.status).toBe(404);
    expect(unknown.json()).toEqual({ erro: 'Lote não encontrado.' });

    for (const query of ['', '?formato=csv', '?formato=IEDUCAR', '?format=ieducar']) {
      const wrong = await request({ url }, 'GET', `/api/lotes/${lote}/correcoes${query}`);
      expect(wrong.status, query).toBe(400);
      expect(wrong.json()).toEqual({ erro: 'Parâmetro formato deve ser ieducar.' });
    }
    for (const query of ['&parte=tudo', '&parte=PREVIA', '&parte=previa&parte=correcao']) {
      const wrong = await request({ url }, 'GET', `/api/lotes/${lote}/correcoes?formato=ieducar${query}`);
      expect(wrong.status, query).toBe(400);
      expect(wrong.json()).toEqual({ erro: 'Parâmetro parte deve ser previa ou correcao.' });
    }

    const noKey = await fetch(`${url}/api/lotes/${lote}/correcoes?formato=ieducar`);
    expect(noKey.status).toBe(401);
  });
});
