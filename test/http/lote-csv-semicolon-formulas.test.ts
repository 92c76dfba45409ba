// Issue 50: Excel in Brazil splits a `.csv` on `;`, so `x;=1+1;` in a batch's `referencia`, a file
// name or a `Código na Escola` became a `=1+1` cell of the batch's CSVs. Every CSV a batch answers
// (divergencias, falhas, resumo, comparacao) is read here as a `;` reader reads it, and as an RFC
// 4180 comma reader (SPEC §3.5, decided, issue 50).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { formWith, type UploadFile } from '../helpers/http.js';
import { request, startHarness, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const HOSTILE_REFERENCIA = 'x;=1+1;';
const HOSTILE_FILE = 'escola;=2+2;.json';
const HOSTILE_CODIGO = 'ALU;@SOMA(1;2)';
const HARMLESS_REFERENCIA = 'escola-b; turma 1';

const retorno = (codigo: string) =>
  JSON.stringify([
    {
      Registro: '30',
      Linha: '2',
      'Código na Escola': codigo,
      Campo: 'Número do CPF',
      Mensagem: 'Dado divergente da base da Receita Federal',
      Conteúdo: '11111111111 -- 11111111122',
    },
  ]);

/**
 * The cells of `text` as Excel and LibreOffice read it with `;` as the separator: a quote opens a
 * quoted cell only where a cell starts; a line break outside one ends the row.
 */
function cellsSplitOnSemicolon(text: string): string[] {
  const cells: string[] = [];
  let i = 0;
  while (i < text.length) {
    let cell = '';
    if (text[i] === '"') {
      for (i++; i < text.length; i++) {
        if (text[i] !== '"') cell += text[i];
        else if (text[i + 1] === '"') cell += text[++i];
        else {
          i++;
          break;
        }
      }
    }
    while (i < text.length && text[i] !== ';' && text[i] !== '\n' && !(text[i] === '\r' && text[i + 1] === '\n')) cell += text[i++];
    cells.push(cell);
    if (text[i] === '\r') i++;
    i++;
  }
  return cells;
}

const FORMULA = /^[ \t\r\n]*[=+\-@]/;

let server: Harness;
let anterior: string;
let lote: string;

async function batchOf(files: ReadonlyArray<{ file: UploadFile; referencia: string }>): Promise<string> {
  const created = await request(server, 'POST', '/api/lotes', {
    body: JSON.stringify({ nome: 'lote com ponto e vírgula' }),
    headers: { 'content-type': 'application/json' },
  });
  expect(created.status).toBe(201);
  const id = created.json().id as string;
  for (const { file, referencia } of files) {
    const sent = await request(server, 'POST', `/api/lotes/${id}/divergencias-rf`, { body: await formWith([file], { referencia }) });
    expect(sent.status).toBe(202);
  }
  expect((await request(server, 'POST', `/api/lotes/${id}/fechar`)).status).toBe(200);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${id}`)).json().estado === 'concluido', {
    timeoutMs: onThisMachine(20_000),
    what: 'batch concluido',
  });
  return id;
}

beforeAll(async () => {
  // Embedded mode: the CSVs come from the one writer in both modes (shared/src/core/output/csv.ts).
  server = await startHarness('embedded', { redisUrl: '' });
  const round = (codigo: string) => [
    { file: { field: 'retorno', content: retorno(codigo), filename: HOSTILE_FILE }, referencia: HOSTILE_REFERENCIA },
    { file: { field: 'retorno', content: 'not json', filename: HOSTILE_FILE }, referencia: HARMLESS_REFERENCIA },
  ];
  anterior = await batchOf(round('ALU0'));
  lote = await batchOf(round(HOSTILE_CODIGO));
});
afterAll(async () => {
  await server?.dispose();
});

const GUARDED_REFERENCIA = "x;'=1+1;";
const GUARDED_FILE = "escola;'=2+2;.json";
const GUARDED_CODIGO = "ALU;'@SOMA(1;2)";

describe.each([
  ['divergencias', () => `/api/lotes/${lote}/divergencias?format=csv`, [GUARDED_REFERENCIA, GUARDED_FILE, GUARDED_CODIGO]],
  ['falhas', () => `/api/lotes/${lote}/falhas?format=csv`, [HARMLESS_REFERENCIA, GUARDED_FILE]],
  ['resumo', () => `/api/lotes/${lote}/resumo?format=csv`, [GUARDED_REFERENCIA, HARMLESS_REFERENCIA]],
  ['comparacao', () => `/api/lotes/${lote}/comparacao?anterior=${anterior}&format=csv`, [GUARDED_REFERENCIA, GUARDED_CODIGO]],
])('the batch %s CSV', (_name, route, expected) => {
  let text: string;
  beforeAll(async () => {
    const answer = await request(server, 'GET', route());
    expect(answer.status).toBe(200);
    text = answer.bytes.toString('utf8');
  });

  it('read as a ";" reader reads it, has no cell that starts a formula', () => {
    expect(text).toContain(';');
    expect(cellsSplitOnSemicolon(text).filter((cell) => FORMULA.test(cell))).toEqual([]);
  });

  it('read as an RFC 4180 comma reader, keeps every value whole: the harmless ones as sent', () => {
    const values = parseCsv(text).flat();
    expect(values).toEqual(expect.arrayContaining(expected));
    expect(values.filter((v) => v.includes(';')).every((v) => !/;[ "]*[=+\-@]/.test(v))).toBe(true);
  });
});

it('the divergencias CSV carries the hostile file name and code with their pieces guarded', async () => {
  const rows = parseCsv((await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`)).bytes.toString('utf8'));
  expect(rows[1]!.slice(0, 3)).toEqual([GUARDED_REFERENCIA, GUARDED_FILE, GUARDED_CODIGO]);
  // JSON keeps every value exactly as read (SPEC §3.5).
  const json = (await request(server, 'GET', `/api/lotes/${lote}/divergencias`)).json() as {
    divergencias: Array<{ referencia: string; arquivo: string; codigo_na_escola: string }>;
  };
  expect(json.divergencias.map((d) => [d.referencia, d.arquivo, d.codigo_na_escola])).toEqual([
    [HOSTILE_REFERENCIA, HOSTILE_FILE, HOSTILE_CODIGO],
  ]);
});
