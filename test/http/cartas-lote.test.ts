// Issue 56, a letter per school: GET /api/lotes/{id}/cartas answers a batch's letters as a
// workbook (counts as numbers) or a printable page (strict Content-Security-Policy, every value
// escaped), a download named after the batch, refused as /resumo is (unknown id, bad format, 409
// until concluded unless parcial); and `censo cartas` on `censo lote`'s output of the same files
// (json, csv, xlsx) writes the same letters.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CARTAS_MAX_BYTES, cartasEmAndamento, cartasLimite } from '../../services/api/dist/routes/tarefas/cartas.js';
import { censo } from '../cli/censo-process.js';
import { formWith } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import { request, startHarness, waitForTarefa, workbookSheets, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { CPF, NOME, retorno } from '../helpers/retorno-linhas.js';

/** referencia (the file's path, as `censo lote --servidor` sends it) → the file's text. */
const ESCOLAS: Readonly<Record<string, string>> = {
  'escola-a/retorno.json': retorno([
    ['A1', CPF, '11111111111 -- 11111111122'], // formulario (rule 10)
    ['A2', NOME, 'MARIA SILVA -- MARIA DA SILVA'], // arquivo
    ['A3', 'Data de nascimento', '01/01/2010 -- 31/02/2010'], // receita: a notice for the family
    ['A4', NOME, 'MARIA DA SILVA -- Maria da Silva'], // grafia
  ]),
  'escola-b/retorno.json': retorno([['<script>alert(1)</script>', 'Filiação 2', 'JOSE -- JOSE <b>LIMA</b>']]),
  'escola-c/retorno.json': '{ quebrado',
};

const redis = useTestRedis();
let server: Harness;
let lote: string;
let work: string;

const criarLote = async () =>
  (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json().id as string;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-cartas-'));
  server = await startHarness('embedded', { redisUrl: redis.url });
  lote = await criarLote();
  for (const [referencia, content] of Object.entries(ESCOLAS)) {
    await mkdir(path.join(work, 'escolas', path.dirname(referencia)), { recursive: true });
    await writeFile(path.join(work, 'escolas', referencia), content);
    const body = await formWith([{ field: 'retorno', content, filename: path.basename(referencia) }], { referencia });
    await waitForTarefa(server, (await request(server, 'POST', `/api/lotes/${lote}/divergencias-rf`, { body })).json().id as string);
  }
  await request(server, 'POST', `/api/lotes/${lote}/fechar`);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', { what: 'the batch' });
});
afterAll(async () => {
  cartasLimite.divergencias = 400_000;
  await server?.dispose();
  await rm(work, { recursive: true, force: true });
});

const cartas = (query = '', id = lote) => request(server, 'GET', `/api/lotes/${id}/cartas${query}`);

describe('GET /api/lotes/{id}/cartas', () => {
  it('xlsx by default: a row per school read, its counts as numbers; a row per divergence to act on', async () => {
    const answer = await cartas();
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    expect(answer.headers.get('content-disposition')).toBe(`attachment; filename="cartas-lote-${lote}.xlsx"`);
    expect(answer.headers.get('lote-tarefas-falhas')).toBe('1');
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(answer.bytes as unknown as ExcelJS.Buffer);
    const escolas = book.getWorksheet('escolas')!;
    // The failed file has no letter: nothing of it was read.
    expect(escolas.rowCount).toBe(3);
    const a = escolas.getRow(2);
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((column) => a.getCell(column).value)).toEqual(['escola-a/retorno.json', 4, 1, 1, 1, 0, 1, 0]);
    for (const column of [2, 3, 4, 5, 6, 7, 8]) expect(a.getCell(column).type, `column ${column}`).toBe(ExcelJS.ValueType.Number);
    expect(a.getCell(9).value).toBe(
      '1 no formulário do Educacenso, 1 para o cidadão na Receita Federal, 1 pelo arquivo corrigido (corrija também no sistema da escola); ' +
        '1 só de grafia, nada a fazer.',
    );
    const pessoas = book.getWorksheet('pessoas')!;
    const codes = Array.from({ length: pessoas.rowCount - 1 }, (_, i) => pessoas.getRow(i + 2).getCell(2).value);
    expect(codes).toEqual(['A1', 'A2', 'A3', '<script>alert(1)</script>']);
  });

  it('html: a printable page, escaped, with the family notice, that a browser may open but runs nothing from', async () => {
    const answer = await cartas('?format=html');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toBe(`attachment; filename="cartas-lote-${lote}.html"`);
    const csp = answer.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(csp).not.toMatch(/unsafe/);
    const html = answer.bytes.toString('utf8');
    // The one style the policy allows is the page's own, by its hash.
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);
    expect(html).not.toMatch(/<script|<b>/);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html.match(/class="aviso"/g)).toHaveLength(1);
    expect(html).toContain('Estudante (código na escola): A3.');
  });

  it('refuses as /resumo does: a bad format (400), an unknown batch (404), one not concluded (409 unless parcial)', async () => {
    const bad = await cartas('?format=csv');
    expect([bad.status, bad.json()]).toEqual([400, { erro: 'Parâmetro format deve ser xlsx ou html.' }]);
    const unknown = await cartas('', '00000000-0000-4000-8000-000000000000');
    expect([unknown.status, unknown.json()]).toEqual([404, { erro: 'Lote não encontrado.' }]);
    expect((await cartas('', 'nao-e-um-id')).status).toBe(404);
    const open = await criarLote();
    const notDone = await cartas('', open);
    expect([notDone.status, notDone.json()]).toEqual([409, { erro: 'Lote ainda não concluído.' }]);
    expect(notDone.headers.get('retry-after')).toBe('2');
    const parcial = await cartas('?format=html&parcial=true', open);
    expect(parcial.status).toBe(200);
    expect(parcial.headers.get('lote-estado')).toBe('aberto');
    expect(parcial.bytes.toString('utf8')).toContain('Nenhuma escola neste resultado.');
  });

  it('a batch beyond the bound is refused before a divergence is read (422), and nothing stays held after an answer', async () => {
    // The batch holds 5 divergences (4 of escola-a, 1 of escola-b), counted from its tasks.
    cartasLimite.divergencias = 4;
    try {
      const big = await cartas();
      expect([big.status, big.json()]).toEqual([
        422,
        { erro: 'Lote grande demais para as cartas: 5 divergências, o limite é 4. Use lotes menores ou o censo cartas.' },
      ]);
      cartasLimite.divergencias = 5;
      expect((await cartas('?format=html')).status).toBe(200);
      await waitFor(() => cartasEmAndamento() === 0, { what: 'the letters to let go of what they held' });
      // In bytes too (issue 59): the batch's stored results, beyond the bound.
      cartasLimite.bytes = 100;
      const fat = await cartas();
      expect(fat.status).toBe(422);
      expect(fat.json().erro).toMatch(
        /^Lote grande demais para as cartas: \d+(,\d)? MiB de resultados, o limite é 0 MiB\. Use lotes menores ou o censo cartas\.$/,
      );
    } finally {
      cartasLimite.divergencias = 400_000;
      cartasLimite.bytes = CARTAS_MAX_BYTES;
    }
  });

  it('censo cartas on censo lote’s output of the same files (json, csv, xlsx) writes the letters the route answers', async () => {
    const html = (await cartas('?format=html')).bytes;
    const xlsx = await workbookSheets((await cartas('?format=xlsx')).bytes);
    for (const format of ['json', 'csv', 'xlsx']) {
      const resultado = path.join(work, `lote.${format}`);
      const lote = await censo(['lote', path.join(work, 'escolas'), '-o', resultado, '--quiet']);
      // The unreadable file makes `lote` say so and exit 1; the result is written.
      expect(lote.code, lote.stderr).toBe(1);
      for (const [ext, expected] of [
        ['html', html],
        ['xlsx', xlsx],
      ] as const) {
        const saida = path.join(work, `cartas-de-${format}.${ext}`);
        const run = await censo(['cartas', resultado, '-o', saida]);
        expect(run.code, run.stderr).toBe(0);
        const written = await readFile(saida);
        if (ext === 'html') expect(written.toString('utf8'), `${format} → html`).toBe((expected as Buffer).toString('utf8'));
        else expect(await workbookSheets(written), `${format} → xlsx`).toEqual(expected);
      }
    }
    // A letters workbook saved among the returns is the census's own output, passed over, not a failed return.
    await writeFile(path.join(work, 'escolas', 'cartas.xlsx'), await readFile(path.join(work, 'cartas-de-json.xlsx')));
    const again = await censo(['lote', path.join(work, 'escolas'), '-o', path.join(work, 'de-novo.json')]);
    expect(again.stderr).toContain('"cartas.xlsx" (resultado do censo, não é um retorno)');
    const wrong = await censo(['cartas', path.join(work, 'lote.json'), '-o', path.join(work, 'cartas.pdf')]);
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringContaining('as cartas são gravadas em .xlsx ou .html')]);
  });
});
