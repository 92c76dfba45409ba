// POST /api/censo-corrigido (SPEC §3.4) over HTTP, on values the layout must refuse or transliterate:
// an impossible birth date is a correct value that cannot be written (not applied, counted), a
// name with letters NFD does not decompose (Ø, Æ, Œ, ß…) keeps them as their Latin letters, and a
// UTF-16 text file cut inside a character is unreadable rather than gaining a `?` line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, expectEmptyDir, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

const RF = 'Divergência com a base da Receita Federal.';
const SCHOOL = '00|12345678|ESCOLA MUNICIPAL|4205407';
const person = (codigo: string, nome = 'ANA LIMA', data = '14/03/2014') => `30|12345678|${codigo}|||${nome}|${data}|1|MAE|PAI|2`;

interface Row {
  readonly linha: number;
  readonly codigo: string;
  readonly campo: string;
  readonly conteudo: string;
}

const retorno = (rows: readonly Row[]): UploadFile => ({
  field: 'retorno',
  filename: 'retorno.json',
  content: JSON.stringify(
    rows.map((r) => ({
      Registro: '30',
      Linha: String(r.linha),
      'Código na Escola': r.codigo,
      Campo: r.campo,
      Mensagem: RF,
      Conteúdo: r.conteudo,
    })),
  ),
});

async function send(route: string, files: UploadFile[]) {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('impossible birth dates', () => {
  // Each correct value has a known shape (§3.2) but names no day of the calendar.
  const impossible = ['31/02/2014', '29/02/2015', '30/2/2016', '31/04/2014', '15/13/2014', '00/01/2014', '2014-02-30', '31062014'];
  const lines = [SCHOOL, ...impossible.map((_, i) => person(`ALU${i}`)), person('BIS', 'ANA LIMA', '01/01/2015'), '99|'];
  const txt: UploadFile = { field: 'txt', filename: 'censo.txt', content: lines.join('\n') + '\n' };
  const rows: Row[] = [
    ...impossible.map((data, i) => ({ linha: i + 2, codigo: `ALU${i}`, campo: 'Data de nascimento', conteudo: `14/03/2014 -- ${data}` })),
    // A leap day that exists is written.
    { linha: impossible.length + 2, codigo: 'BIS', campo: 'Data de nascimento', conteudo: '01/01/2015 -- 2016-02-29' },
  ];

  it('are not applied and are counted in Censo-Correcoes-Nao-Aplicadas; a real leap day is applied', async () => {
    const { response, bytes } = await send('/api/censo-corrigido', [retorno(rows), txt]);
    expect(response.status).toBe(200);
    expect(response.headers.get('censo-correcoes-nao-aplicadas')).toBe(String(impossible.length));
    expect(response.headers.get('censo-pessoas-corrigidas')).toBe('1');
    const expected = [...lines];
    expected[impossible.length + 1] = person('BIS', 'ANA LIMA', '29/02/2016');
    expect(bytes.toString('latin1')).toBe(expected.join('\n') + '\n');
    await expectEmptyDir(server.uploadDir);
  });

  it('retorno-rf keeps them as the return wrote them (none of the formats of §3.2)', async () => {
    const { response, bytes } = await send('/api/retorno-rf', [retorno(rows), txt]);
    expect(response.status).toBe(200);
    const { pessoas } = JSON.parse(bytes.toString('utf8')) as { pessoas: { data_nascimento: string }[] };
    expect(pessoas.map((p) => p.data_nascimento)).toEqual([...impossible, '29/02/2016']);
  });
});

describe('names with letters that NFD does not decompose', () => {
  it.each([
    ['Bjørn Ærø Søndergaard', 'BJORN AERO SONDERGAARD'],
    ['ØSTERGÅRD ÆLFRIC', 'OSTERGARD AELFRIC'],
    ['Œdipo Cœlho', 'OEDIPO COELHO'],
    ['Straße Weiß', 'STRASSE WEISS'],
    ['Đorđe Ðoković', 'DORDE DOKOVIC'],
    ['Łukasz Michał', 'LUKASZ MICHAL'],
    ['Þórður Þorsteinsson', 'THORDUR THORSTEINSSON'],
    ['Ħal Ŧomaž Ŀuís', 'HAL TOMAZ LUIS'],
    // SPEC's own examples (accents), and what is still removed.
    ["José D'Ávila-Conceição 3", 'JOSE DAVILACONCEICAO'],
  ])('%j is written %j', async (correct, written) => {
    const lines = [SCHOOL, person('ALU1', 'NOME ANTIGO'), '99|'];
    const txt: UploadFile = { field: 'txt', filename: 'censo.txt', content: lines.join('\r\n') };
    const { response, bytes } = await send('/api/censo-corrigido', [
      retorno([{ linha: 2, codigo: 'ALU1', campo: 'Nome completo', conteudo: `NOME ANTIGO -- ${correct}` }]),
      txt,
    ]);
    expect(response.status).toBe(200);
    expect(response.headers.get('censo-correcoes-nao-aplicadas')).toBe('0');
    expect(bytes.toString('latin1')).toBe([SCHOOL, person('ALU1', written), '99|'].join('\r\n'));
  });

  it('a name in another script is not transliterated: nothing is left, so it is not applied', async () => {
    const txt: UploadFile = { field: 'txt', filename: 'censo.txt', content: `${SCHOOL}\n${person('ALU1', 'NOME ANTIGO')}\n99|\n` };
    const { response, bytes } = await send('/api/censo-corrigido', [
      retorno([{ linha: 2, codigo: 'ALU1', campo: 'Nome completo', conteudo: 'NOME ANTIGO -- Иван Петров' }]),
      txt,
    ]);
    expect(response.status).toBe(200);
    expect(response.headers.get('censo-correcoes-nao-aplicadas')).toBe('1');
    expect(bytes.toString('latin1')).toBe(txt.content);
  });
});

describe('a UTF-16 text file with an odd number of bytes', () => {
  const text = [SCHOOL, person('ALU1'), '99|'].join('\r\n') + '\r\n';
  const rows = [{ linha: 2, codigo: 'ALU1', campo: 'Número do CPF', conteudo: ' -- 52998224725' }];
  const variants: [string, Buffer][] = [
    ['LE with BOM', Buffer.concat([Buffer.from('\ufeff' + text, 'utf16le'), Buffer.from([0x41])])],
    ['LE without BOM, cut in its last character', Buffer.from(text, 'utf16le').subarray(0, -1)],
    ['BE with BOM', Buffer.concat([Buffer.from('\ufeff' + text, 'utf16le').swap16(), Buffer.from([0x00])])],
  ];

  it.each(variants)('%s is unreadable (400) on censo-corrigido and retorno-rf', async (_name, bytes) => {
    for (const route of ['/api/censo-corrigido', '/api/retorno-rf']) {
      const answer = await send(route, [retorno(rows), { field: 'txt', filename: 'censo.txt', content: bytes }]);
      expect(answer.response.status, route).toBe(400);
      expect(answer.response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(answer.bytes.toString('utf8'))).toEqual({ erro: 'Arquivo txt ilegível: texto UTF-16 com número ímpar de bytes.' });
    }
    await expectEmptyDir(server.uploadDir);
  });

  it('a lone surrogate (half a character) is unreadable too, not a `?`', async () => {
    const bytes = Buffer.from('\ufeff' + text.replace('ANA', 'AN\ud800'), 'utf16le');
    const answer = await send('/api/censo-corrigido', [retorno(rows), { field: 'txt', filename: 'censo.txt', content: bytes }]);
    expect(answer.response.status).toBe(400);
    expect(JSON.parse(answer.bytes.toString('utf8'))).toEqual({ erro: 'Arquivo txt ilegível: texto UTF-16 com caractere inválido.' });
  });

  it('the same file with its byte count even is corrected', async () => {
    const { response, bytes } = await send('/api/censo-corrigido', [
      retorno(rows),
      { field: 'txt', filename: 'censo.txt', content: Buffer.from('\ufeff' + text, 'utf16le') },
    ]);
    expect(response.status).toBe(200);
    expect(bytes.toString('latin1')).toBe(text.replace('|||ANA', '||52998224725|ANA'));
  });
});
