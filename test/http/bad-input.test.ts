// Hostile or broken input over HTTP (black box, embedded runner): every case gets its SPEC status
// and a clear `erro`, nothing is left in UPLOAD_DIR, and the service keeps answering. The readers'
// own unit tests (test/unit/retorno-*.test.ts, censo-txt.test.ts) cover the same files in more
// detail; these prove the whole path (multipart → disk → job → error mapper) holds.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, post, startTestServer, type TestServer } from '../helpers/http.js';
import { BOUNDARY, closing, openUpload, partHead } from '../helpers/raw-http.js';
import { HEADER, is, row, textRow, workbookParts, zipParts } from '../helpers/xlsx-builders.js';
import { onThisMachine } from '../helpers/deadline.js';

const [basico] = fixtureCases();
if (!basico) throw new Error('no fixtures');

const UNREADABLE = 'Arquivo retorno ilegível: ';
const NOT_ZIP = `${UNREADABLE}não é um arquivo xlsx (zip) válido.`;
const INVALID_JSON = `${UNREADABLE}não é um JSON válido.`;
const NO_ARRAY = `${UNREADABLE}o JSON não contém uma lista de linhas.`;
const NOT_OBJECTS = `${UNREADABLE}as linhas do JSON devem ser objetos.`;
const MB = 1024 * 1024;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});
afterEach(async () => {
  // Whatever the case did, nothing stays on disk and the service still answers.
  await expectEmptyDir(server.uploadDir, 5000);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
});

const GOOD_SHEET = { sheets: [{ rows: textRow(1, [...HEADER]) + textRow(2, ['30', '2', 'ALU0001', 'CPF', 'Receita Federal', '1 -- 2']) }] };

async function sendRetorno(content: string | Uint8Array, filename: string) {
  return post(server, '/api/divergencias-rf', await formWith([{ field: 'retorno', content, filename }]));
}

async function expectUnreadable(content: string | Uint8Array, filename: string, erro: string | RegExp) {
  const res = await sendRetorno(content, filename);
  expect(res.status).toBe(400);
  const body = res.body as { erro: string };
  expect(Object.keys(body)).toEqual(['erro']);
  if (typeof erro === 'string') expect(body.erro).toBe(erro);
  else expect(body.erro).toMatch(erro);
}

describe('return .xlsx', () => {
  it('empty file', async () => {
    await expectUnreadable('', 'retorno.xlsx', NOT_ZIP);
  });

  it('text renamed .xlsx, and an old .xls (OLE2) renamed .xlsx', async () => {
    await expectUnreadable('Registro;Linha;Campo\n30;2;CPF\n', 'retorno.xlsx', NOT_ZIP);
    const ole = Buffer.alloc(4096);
    Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(ole);
    await expectUnreadable(ole, 'retorno.xlsx', NOT_ZIP);
  });

  it('a zip that is not a workbook', async () => {
    const zip = await readFile(await zipParts({ 'leia-me.txt': 'nada aqui', 'dados/a.csv': 'a;b\n1;2\n' }));
    await expectUnreadable(zip, 'retorno.xlsx', new RegExp(`^${UNREADABLE}`));
  });

  it('a workbook with rows but no recognisable header', async () => {
    const zip = await readFile(
      await zipParts(workbookParts({ sheets: [{ rows: textRow(1, ['Nome', 'Idade']) + textRow(2, ['Ana', '7']) }] })),
    );
    await expectUnreadable(zip, 'retorno.xlsx', new RegExp(`^${UNREADABLE}`));
  });

  it('a truncated zip', async () => {
    const zip = await readFile(await zipParts(workbookParts(GOOD_SHEET)));
    for (const cut of [30, Math.floor(zip.length / 2), zip.length - 10]) {
      await expectUnreadable(zip.subarray(0, cut), 'retorno.xlsx', new RegExp(`^${UNREADABLE}`));
    }
  });

  it('XML entity tricks: entity expansion in a sheet, an external entity in shared strings', async () => {
    const lol = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;">]>';
    const inSheet = workbookParts(GOOD_SHEET);
    inSheet['xl/worksheets/sheet1.xml'] =
      lol +
      String(inSheet['xl/worksheets/sheet1.xml'])
        .replace(/^<\?xml[^>]*\?>/, '')
        .replace('1 -- 2', '&lol2;');
    await expectUnreadable(await readFile(await zipParts(inSheet)), 'retorno.xlsx', /DOCTYPE\/ENTITY/);

    const xxe = workbookParts({
      sheets: [{ rows: textRow(1, [...HEADER]) + '<row r="2"><c r="A2"><v>30</v></c><c r="F2" t="s"><v>0</v></c></row>' }],
      sharedStrings: '<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><sst><si><t>&xxe;</t></si></sst>',
    });
    const res = await sendRetorno(await readFile(await zipParts(xxe)), 'retorno.xlsx');
    expect(res.status).toBe(400);
    expect((res.body as { erro: string }).erro).toMatch(/DOCTYPE\/ENTITY/);
    expect(JSON.stringify(res.body)).not.toMatch(/root:/);
  });

  it(
    'a zip bomb: refused at the 400 MB decompressed cap while streaming',
    async () => {
      const header = `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${textRow(1, [...HEADER])}`;
      const line = '<row><c><v>30</v></c><c><v>1</v></c><c t="inlineStr"><is><t>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA</t></is></c></row>';
      const block = Buffer.from(line.repeat(Math.floor(MB / line.length)));
      function* bomb(): Generator<Buffer> {
        yield Buffer.from(header);
        for (let i = 0; i < 420; i++) yield block;
        yield Buffer.from('</sheetData></worksheet>');
      }
      const parts = workbookParts(GOOD_SHEET);
      parts['xl/worksheets/sheet1.xml'] = () => Readable.from(bomb());
      const file = await zipParts(parts);
      expect((await stat(file)).size).toBeLessThan(2 * MB);
      await expectUnreadable(await readFile(file), 'retorno.xlsx', `${UNREADABLE}conteúdo descompactado excede 400 MB.`);
    },
    onThisMachine(60_000),
  );

  it("a huge single cell: up to 32,767 characters (Excel's limit) is read, beyond that a clear 400", async () => {
    const cell = (text: string) =>
      textRow(1, [...HEADER]) + textRow(2, ['30', '2', 'ALU0001', 'Número do CPF', 'Receita Federal', `${text} -- 1`]);
    // The cell holds `${text} -- 1`: 5 characters more than `text`.
    const big = 'X'.repeat(32_767 - 5);
    const res = await sendRetorno(await readFile(await zipParts(workbookParts({ sheets: [{ rows: cell(big) }] }))), 'retorno.xlsx');
    expect(res.status).toBe(200);
    const [d] = (res.body as { divergencias: Array<{ enviado: string; correto: string }> }).divergencias;
    expect(d?.enviado).toBe(big);
    expect(d?.correto).toBe('1');
    for (const text of ['X'.repeat(32_768 - 5), 'X'.repeat(8 * MB)]) {
      const huge = await readFile(await zipParts(workbookParts({ sheets: [{ rows: cell(text) }] })));
      await expectUnreadable(huge, 'retorno.xlsx', `${UNREADABLE}tem uma célula com mais de 32.767 caracteres.`);
    }
  });

  it('rows with thousands of columns', async () => {
    const wide = Array.from({ length: 5000 }, (_, i) => is(`${colName(i + 7)}2`, `extra ${i}`)).join('');
    const rows =
      textRow(1, [...HEADER]) +
      row(2, ...['30', '2', 'ALU0001', 'Número do CPF', 'Receita Federal', '1 -- 2'].map((v, i) => is(`${colName(i + 1)}2`, v)), wide);
    const res = await sendRetorno(await readFile(await zipParts(workbookParts({ sheets: [{ rows }] }))), 'retorno.xlsx');
    expect(res.status).toBe(200);
    expect((res.body as { divergencias: unknown[] }).divergencias).toHaveLength(1);
  });
});

describe('return .json', () => {
  const ROW = { Registro: '30', Linha: '2', 'Código na Escola': 'ALU0001', Campo: 'CPF', Mensagem: 'Receita Federal', Conteúdo: '1 -- 2' };

  it('empty file', async () => {
    await expectUnreadable('', 'retorno.json', INVALID_JSON);
  });

  it('truncated JSON', async () => {
    const full = JSON.stringify([ROW, ROW]);
    await expectUnreadable(full.slice(0, full.length - 7), 'retorno.json', INVALID_JSON);
  });

  it('deeply nested arrays (no stack overflow)', async () => {
    await expectUnreadable('['.repeat(200_000) + ']'.repeat(200_000), 'retorno.json', NOT_OBJECTS);
    await expectUnreadable('{"a":' + '{"b":'.repeat(100_000), 'retorno.json', INVALID_JSON);
  });

  it('a bare number, and an object without a rows array', async () => {
    await expectUnreadable('42', 'retorno.json', NO_ARRAY);
    await expectUnreadable('{"escola": "x", "total": 3}', 'retorno.json', NO_ARRAY);
  });

  it('rows that are not objects', async () => {
    await expectUnreadable('[1, "dois", null]', 'retorno.json', NOT_OBJECTS);
  });

  it('25 MB of one string: refused at its 32,768th character (SPEC §5)', async () => {
    const text = `"${'a'.repeat(25 * MB - 2)}"`;
    await expectUnreadable(text, 'retorno.json', `${UNREADABLE}tem um texto com mais de 32.767 caracteres.`);
  });
});

describe('census txt', () => {
  const retorno = (linha: string) =>
    JSON.stringify([
      {
        Registro: '30',
        Linha: linha,
        'Código na Escola': 'ALU0001',
        Campo: 'Número do CPF',
        Mensagem: 'Receita Federal',
        Conteúdo: '52998224725 -- 52998224726',
      },
    ]);

  async function sendTxt(txt: string | Uint8Array, linha = '2') {
    return post(
      server,
      '/api/retorno-rf',
      await formWith([
        { field: 'retorno', content: retorno(linha), filename: 'retorno.json' },
        { field: 'txt', content: txt, filename: 'censo.txt' },
      ]),
    );
  }

  const mismatch = (linha: string) => ({ erro: `O arquivo txt não corresponde ao retorno (linha ${linha}).` });

  it('binary garbage', async () => {
    // Deterministic noise without `|`, so no line can be a record 30.
    let seed = 42;
    const noise = Buffer.alloc(256 * 1024, 0).map(() => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const b = seed >>> 24;
      return b === 0x7c ? 0 : b;
    });
    const res = await sendTxt(noise);
    expect(res.status).toBe(422);
    expect(res.body).toEqual(mismatch('2'));
  });

  it('invalid UTF-8 mixed with Latin-1: read as windows-1252', async () => {
    const txt = Buffer.concat([
      Buffer.from('00|12345678|1|ESCOLA S\u00c3O JOS\u00c9\n', 'utf8'),
      Buffer.from('30|12345678|ALU0001|123456789012|52998224725|JO\u00c3O CONCEI\u00c7\u00c3O|14/03/2014|1|M\u00c3E|PAI\n', 'latin1'),
    ]);
    const res = await sendTxt(txt);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      pessoas: [
        {
          codigo_na_escola: 'ALU0001',
          linha: '2',
          cpf: '52998224726',
          nome: 'JO\u00c3O CONCEI\u00c7\u00c3O',
          data_nascimento: '14/03/2014',
          inep: '123456789012',
          nome_mae: 'M\u00c3E',
          // A CPF the school sent stays in the corrected file (field 5 rule 10, SPEC §11).
          arquivo_cpf: '52998224725',
          arquivo_nome: 'JO\u00c3O CONCEI\u00c7\u00c3O',
          arquivo_data_nascimento: '14/03/2014',
          arquivo_inep: '123456789012',
          arquivo_nome_mae: 'M\u00c3E',
          nao_aplicadas: 'CPF: o Educacenso não troca por arquivo um CPF que já tem (regra 10 do CPF)',
          regra_25: false,
        },
      ],
    });
  });

  it('a 25 MB single line', async () => {
    const res = await sendTxt(new Uint8Array(25 * MB).fill(0x41));
    expect(res.status).toBe(422);
    expect(res.body).toEqual(mismatch('2'));
  });

  it('lines without any record 30', async () => {
    const res = await sendTxt('00|12345678|1|ESCOLA\n40|12345678|SRV0042||1|1|1\n99|\n');
    expect(res.status).toBe(422);
    expect(res.body).toEqual(mismatch('2'));
  });

  it('a line number in the return beyond the end of the file', async () => {
    const res = await sendTxt(await readFile(basico.txt), '999');
    expect(res.status).toBe(422);
    expect(res.body).toEqual(mismatch('999'));
  });
});

describe('requests', () => {
  const json = () => readFile(basico.retorno.json);

  it('a path that does not decode: 400 {"erro"} that does not echo it (not Fastify\'s default body)', async () => {
    for (const url of ['/MARIA%20DA%20SILVA%E0%A4%A', '/api/divergencias-rf%E0%A4%A', '/api/query/%ff']) {
      const res = await fetch(`${server.url}${url}`, { headers: { 'x-api-key': API_KEY } });
      const text = await res.text();
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(text)).toEqual({ erro: 'URL malformada.' });
    }
  });

  it('wrong field names', async () => {
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'arquivo', content: await json(), filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ erro: 'Campo inesperado: arquivo.' });
  });

  it('two retorno files', async () => {
    const file = { field: 'retorno', content: await json(), filename: 'retorno.json' };
    const res = await post(
      server,
      '/api/retorno-rf',
      await formWith([file, file, { field: 'txt', path: basico.txt, filename: 'censo.txt' }]),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ erro: 'Campo enviado mais de uma vez: retorno.' });
  });

  it('extra text fields are ignored; too many fields are refused', async () => {
    const ok = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }], { escola: '123', obs: 'x' }),
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual(basico.expectedDivergencias);
    const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, 'x']));
    const many = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }], fields),
    );
    expect(many.status).toBe(400);
    expect((many.body as { erro: string }).erro).toMatch(/^Campos demais/);
  });

  it('a missing boundary', async () => {
    const res = await post(
      server,
      '/api/divergencias-rf',
      `--x\r\nContent-Disposition: form-data; name="retorno"; filename="r.json"\r\n\r\n[]\r\n--x--\r\n`,
      {
        'x-api-key': API_KEY,
        'content-type': 'multipart/form-data',
      },
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ erro: 'Requisição multipart malformada.' });
  });

  it('a body that ends mid-upload (no closing boundary)', async () => {
    const upload = openUpload(server.url, '/api/divergencias-rf');
    await upload.write(partHead('retorno', 'retorno.json'));
    const res = await upload.finish((await json()).subarray(0, 100));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ erro: 'Requisição multipart malformada.' });
  });

  it('a connection dropped mid-upload', async () => {
    const upload = openUpload(server.url, '/api/divergencias-rf');
    await upload.write(partHead('retorno', 'retorno.json'));
    await upload.write(Buffer.alloc(256 * 1024, 0x20));
    await waitForUploadFile(server.uploadDir);
    upload.request.destroy();
    await expect(upload.response).rejects.toThrow();
  });

  it('a client that disconnects while its job runs', async () => {
    // A return big enough for the job to take a moment after the upload is complete.
    const rows = Array.from({ length: 60_000 }, (_, i) => ({
      Registro: '30',
      Linha: String(i + 2),
      'Código na Escola': `A${i}`,
      Campo: 'Nome',
      Mensagem: 'Receita Federal',
      Conteúdo: 'X -- Y',
    }));
    const body = Buffer.from(JSON.stringify(rows));
    const upload = openUpload(server.url, '/api/divergencias-rf');
    await upload.write(partHead('retorno', 'retorno.json'));
    await upload.write(body);
    await upload.write(closing());
    upload.request.end();
    await waitForUploadFile(server.uploadDir, body.length);
    upload.request.destroy();
    await expect(upload.response).rejects.toThrow();
    // The service is free again: a normal request right after succeeds.
    const res = await post(
      server,
      '/api/divergencias-rf',
      await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'retorno.json' }]),
    );
    expect(res.status).toBe(200);
  });
});

/** Waits until some upload folder holds retorno.json with at least `bytes` bytes. */
async function waitForUploadFile(dir: string, bytes = 1): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    for (const folder of await readdir(dir)) {
      const size = await stat(path.join(dir, folder, 'retorno.json')).then(
        (s) => s.size,
        () => 0,
      );
      if (size >= bytes) return;
    }
    await sleep(10);
  }
  throw new Error('upload never reached the disk');
}

function colName(n: number): string {
  let s = '';
  for (let x = n; x > 0; x = Math.floor((x - 1) / 26)) s = String.fromCharCode(65 + ((x - 1) % 26)) + s;
  return s;
}

void BOUNDARY;
