// SPEC §3.4 (POST /api/censo-corrigido) and §3.5 (?format=csv|xlsx) over HTTP, in embedded and
// queue mode: exact headers, exact CSV bytes, workbooks read back with exceljs and opened by
// LibreOffice, the corrected file byte for byte.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orientacao, type Divergencia } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { onThisMachine } from '../helpers/deadline.js';

const run = promisify(execFile);
const basico = fixtureCases().find((c) => c.name === 'basico')!;
const DIVERGENCIA_COLUMNS = ['codigo_na_escola', 'linha', 'campo', 'enviado', 'correto', 'is_filiacao', 'chave', 'correcao'];
const PESSOA_COLUMNS = [
  'codigo_na_escola',
  'linha',
  'cpf',
  'nome',
  'data_nascimento',
  'inep',
  'nome_mae',
  'arquivo_cpf',
  'arquivo_nome',
  'arquivo_data_nascimento',
  'arquivo_inep',
  'arquivo_nome_mae',
  'nao_aplicadas',
  'regra_25',
];
const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

// Workbooks are for people (SPEC §3.5, session 4): the same columns in the same order, headed by
// the page's words, Sim/Não, the words of chave, and whether the corrected file applies each one.
const DADO: Record<string, string> = {
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
  nome_mae: 'Nome da mãe',
  nome_pai: 'Nome do pai',
};
/** SPEC §11: from the return alone, the corrected file writes the `arquivo` and `educacenso` ones. */
const applied = (item: Record<string, unknown>): boolean => item.correcao === 'arquivo' || item.correcao === 'educacenso';
/** The words of `correcao` (SPEC §11), written again here. */
const COMO: Record<string, string> = {
  arquivo: 'Arquivo corrigido',
  educacenso: 'Já no Educacenso',
  formulario: 'Formulário do Educacenso',
  receita: 'Cidadão na Receita Federal',
  grafia: 'Só grafia',
};
const DIVERGENCIA_SHEET = {
  columns: [
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
  ],
  cells: (d: Record<string, unknown>) => [
    String(d.codigo_na_escola),
    String(d.linha),
    String(d.campo),
    String(d.enviado),
    String(d.correto),
    d.is_filiacao ? 'Sim' : 'Não',
    d.chave === null ? 'Outro campo' : DADO[d.chave as string]!,
    applied(d) ? 'Sim' : 'Não',
    COMO[d.correcao as string]!,
    // The sentence is the core's own (its wording is no contract); that there is one per row is.
    orientacao(d as unknown as Divergencia),
  ],
};
const PESSOA_SHEET = {
  columns: [
    'Código na escola',
    'Linha no txt',
    'CPF',
    'Nome',
    'Data de nascimento',
    'INEP',
    'Nome da mãe',
    'CPF no arquivo corrigido',
    'Nome no arquivo corrigido',
    'Data de nascimento no arquivo corrigido',
    'INEP no arquivo corrigido',
    'Filiação 1 no arquivo corrigido',
    'Não aplicadas no arquivo corrigido (e por quê)',
    'O INEP pode recusar a pessoa (regra 25)',
  ],
  cells: (p: Record<string, unknown>) =>
    PESSOA_COLUMNS.map((c) => (p[c] === null ? '' : typeof p[c] === 'boolean' ? (p[c] ? 'Sim' : 'Não') : String(p[c]))),
};

/** An independent RFC 4180 oracle: quote when needed, double quotes, CRLF. */
function csvOf(columns: readonly string[], items: readonly Record<string, unknown>[]): string {
  const field = (v: unknown) => {
    const text = v === null ? '' : String(v);
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return [columns, ...items.map((item) => columns.map((c) => item[c]))].map((row) => `${row.map(field).join(',')}\r\n`).join('');
}

let redis: TestRedis;
let work: string;
const prefixes: string[] = [];
beforeAll(async () => {
  redis = await startTestRedis();
  work = await mkdtemp(path.join(os.tmpdir(), 'censo-formats-'));
});
afterAll(async () => {
  await Promise.all(prefixes.map((p) => deleteKeys(redis.url, p)));
  await redis.stop();
  await rm(work, { recursive: true, force: true });
});

async function upload(server: TestServer, route: string, files: UploadFile[]) {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

const retornoJson: UploadFile = { field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' };
const retornoXlsx: UploadFile = { field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' };
const txt = (filename = 'censo.txt'): UploadFile => ({ field: 'txt', path: basico.txt, filename });
const divergencias = (basico.expectedDivergencias as { divergencias: Record<string, unknown>[] }).divergencias;
const pessoas = (basico.expectedPessoas as { pessoas: Record<string, unknown>[] }).pessoas;

describe.each(['embedded', 'queue'] as const)('%s mode', (mode) => {
  let server: TestServer;
  beforeAll(async () => {
    if (mode === 'embedded') server = await startTestServer();
    else {
      const prefix = uniqueQueuePrefix();
      prefixes.push(prefix);
      server = await startTestServer({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix });
    }
  });
  afterAll(async () => {
    await server.dispose();
  });

  it('censo-corrigido: the submitted txt with fields 4-7 of the changed persons corrected, in ISO-8859-1', async () => {
    const { response, bytes } = await upload(server, '/api/censo-corrigido', [retornoJson, txt()]);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=ISO-8859-1');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="censo-corrigido.txt"');
    expect(response.headers.get('censo-pessoas-corrigidas')).toBe('3');
    // ALU0001's CPF was sent: Educacenso does not change it by migration (field 5 rule 10, SPEC §11);
    // ALU0003's father and sex have no field the file writes.
    expect(response.headers.get('censo-correcoes-nao-aplicadas')).toBe('3');
    // Written by hand from the fixture: ALU0001 (INEP id, birth date; not the CPF), ALU0002 (name, mother),
    // SRV0042 (birth date; its name correction JOÃO → JOAO equals what the file has).
    const original = (await readFile(basico.txt)).toString('latin1').split('\n');
    const expected = [...original];
    expected[1] = original[1]!.replace(
      '|123456789012|52998224725|MARIA DA SILVA SOUZA|14/03/2014|',
      '|123456789099|52998224725|MARIA DA SILVA SOUZA|15/03/2014|',
    );
    // ALU0002's filiação 1 as Educacenso holds it (field 8 rule 4: the Receita's mother, SPEC §11).
    expected[2] = original[2]!.replace('|JOAO PEDRO SOUZA|', '|JOAO PEDRO DE SOUZA|').replace('|1|MARIA SOUZA|', '|1|MARIA DE SOUZA|');
    expected[5] = original[5]!.replace('|JOAO PEREIRA LIMA|02/10/1980|', '|JOAO PEREIRA LIMA|03/10/1980|');
    expect(expected).not.toEqual(original);
    expect(bytes.equals(Buffer.from(expected.join('\n'), 'latin1'))).toBe(true);
    await expectEmptyDir(server.uploadDir);
  });

  it('censo-corrigido: same answer from the xlsx return, and a non-ASCII txt name in filename*', async () => {
    const json = await upload(server, '/api/censo-corrigido', [retornoJson, txt()]);
    const { response, bytes } = await upload(server, '/api/censo-corrigido', [retornoXlsx, txt('Censo São José.TXT')]);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="Censo Sao Jose-corrigido.txt"; filename*=UTF-8''Censo%20S%C3%A3o%20Jos%C3%A9-corrigido.txt`,
    );
    expect(bytes.equals(json.bytes)).toBe(true);
  });

  it('censo-corrigido: the errors of retorno-rf (422 mismatch, 400 missing txt)', async () => {
    const other = path.join(work, `other-${mode}.txt`);
    await writeFile(other, '00|x\n10|y\n');
    const mismatch = await upload(server, '/api/censo-corrigido', [retornoJson, { field: 'txt', path: other, filename: 'censo.txt' }]);
    expect(mismatch.response.status).toBe(422);
    expect(JSON.parse(mismatch.bytes.toString())).toEqual({ erro: 'O arquivo txt não corresponde ao retorno (linha 2).' });
    const missing = await upload(server, '/api/censo-corrigido', [retornoJson]);
    expect(missing.response.status).toBe(400);
    expect(JSON.parse(missing.bytes.toString())).toEqual({ erro: 'Arquivo ausente: envie o campo txt.' });
    await expectEmptyDir(server.uploadDir);
  });

  it.each([
    ['/api/divergencias-rf', [retornoXlsx], 'divergencias', DIVERGENCIA_COLUMNS, divergencias],
    ['/api/retorno-rf', [retornoJson, txt()], 'pessoas', PESSOA_COLUMNS, pessoas],
  ] as const)('%s?format=csv: RFC 4180, CRLF, UTF-8, exact bytes and headers', async (route, files, name, columns, items) => {
    const { response, bytes } = await upload(server, `${route}?format=csv`, [...files]);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${name}.csv"`);
    expect(bytes.toString('utf8')).toBe(csvOf(columns, items));
    expect(bytes[0]).not.toBe(0xef); // no BOM
  });

  it.each([
    ['/api/divergencias-rf', [retornoJson], 'divergencias', DIVERGENCIA_SHEET, divergencias],
    ['/api/retorno-rf', [retornoXlsx, txt()], 'pessoas', PESSOA_SHEET, pessoas],
  ] as const)(
    '%s?format=xlsx: one sheet, bold frozen header in words, every cell text, columns sized',
    async (route, files, name, planilha, items) => {
      const columns = planilha.columns;
      const { response, bytes } = await upload(server, `${route}?format=xlsx`, [...files]);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(XLSX_TYPE);
      const workbook = new ExcelJS.Workbook();
      await workbook.xlsx.load(bytes as unknown as ExcelJS.Buffer);
      expect(workbook.worksheets.map((s) => s.name)).toEqual([name]);
      const sheet = workbook.worksheets[0]!;
      expect(sheet.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
      const header = sheet.getRow(1);
      expect(columns.map((_, i) => header.getCell(i + 1).value)).toEqual([...columns]);
      expect(header.getCell(1).font?.bold).toBe(true);
      // Sized to their content: at least as wide as the header's words.
      columns.forEach((column, c) => expect(sheet.getColumn(c + 1).width, column).toBeGreaterThanOrEqual(column.length));
      expect(sheet.rowCount).toBe(items.length + 1);
      items.forEach((item, r) => {
        const row = sheet.getRow(r + 2);
        planilha.cells(item).forEach((text, c) => {
          const cell = row.getCell(c + 1);
          // An empty text cell reads back as an empty cell.
          if (text === '') expect(cell.value, `${columns[c]} row ${r + 2}`).toBeNull();
          else {
            expect(cell.type, `${columns[c]} row ${r + 2}`).toBe(ExcelJS.ValueType.String);
            expect(cell.value).toBe(text);
          }
        });
      });
      if (name === 'divergencias') {
        // The fixture has both kinds, so the column says something.
        const said = new Set(items.map((item) => planilha.cells(item)[columns.indexOf('No arquivo corrigido')]));
        expect(said).toEqual(new Set(['Sim', 'Não']));
      }
    },
  );

  it('format=json is the default answer, and any other format is a 400 before the body is read', async () => {
    const json = await upload(server, '/api/divergencias-rf?format=json', [retornoJson]);
    expect(JSON.parse(json.bytes.toString())).toEqual(basico.expectedDivergencias);
    for (const format of ['pdf', 'CSV', '']) {
      const { response, bytes } = await upload(server, `/api/divergencias-rf?format=${format}`, [retornoJson]);
      expect(response.status, format).toBe(400);
      expect(JSON.parse(bytes.toString())).toEqual({ erro: 'Parâmetro format deve ser json, csv ou xlsx.' });
    }
  });
});

describe('LibreOffice opens the workbook with CPFs intact', () => {
  it('a CPF with a leading zero survives soffice --convert-to csv', async () => {
    // A test that needs a program must fail when it is missing, never pass silently: .ci/run installs it.
    const soffice = ['/usr/bin/soffice', '/usr/bin/libreoffice'].find((p) => existsSync(p));
    expect(soffice, 'install libreoffice-calc-nogui (.ci/run does)').toBeDefined();
    const server = await startTestServer();
    try {
      const retorno = path.join(work, 'zeros.json');
      await writeFile(
        retorno,
        JSON.stringify([
          {
            Registro: '30',
            Linha: '2',
            'Código na Escola': '007',
            Campo: 'Número do CPF',
            Mensagem: 'Receita Federal',
            Conteúdo: '01234567890 -- 00234567891',
          },
        ]),
      );
      const { response, bytes } = await upload(server, '/api/divergencias-rf?format=xlsx', [
        { field: 'retorno', path: retorno, filename: 'zeros.json' },
      ]);
      expect(response.status).toBe(200);
      const xlsx = path.join(work, 'divergencias.xlsx');
      await writeFile(xlsx, new Uint8Array(bytes));
      // Filter options: comma, double quote, UTF-8 (76).
      const to = 'csv:Text - txt - csv (StarCalc):44,34,76';
      await run(
        soffice!,
        ['--headless', `-env:UserInstallation=file://${path.join(work, 'lo-profile')}`, '--convert-to', to, '--outdir', work, xlsx],
        { timeout: onThisMachine(120_000) },
      );
      const csv = (await readFile(path.join(work, 'divergencias.csv'), 'utf8')).trim().split(/\r?\n/);
      expect(csv[0]).toBe(DIVERGENCIA_SHEET.columns.join(','));
      // A CPF already sent is not changed by migration (field 5 rule 10): the form's to fix.
      expect(csv[1]).toBe(
        '007,2,Número do CPF,01234567890,00234567891,Não,CPF,Não,Formulário do Educacenso,' +
          'O Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF): corrija no formulário do Educacenso.',
      );
    } finally {
      await server.dispose();
    }
  });
});
