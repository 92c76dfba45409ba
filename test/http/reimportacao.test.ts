// INEP's re-import rules over HTTP (SPEC §11), in both modes: every case of the rules' table
// decides `correcao` in POST /api/divergencias-rf and what POST /api/censo-corrigido writes (bytes
// and Censo-Correcoes-Nao-Aplicadas); then a census file of several schools, whose every byte but
// the corrected fields comes back, and one of 101 schools, which is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, formWith, startTestServer, type TestServer, type UploadFile } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { CASOS, corrigidoDe, record30, retornoDe, SCHOOL, txtDe, type Caso } from '../helpers/reimportacao-casos.js';

let redis: TestRedis;
const prefixes: string[] = [];
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await Promise.all(prefixes.map((p) => deleteKeys(redis.url, p)));
  await redis.stop();
});

const retornoFile = (rows: object[]): UploadFile => ({ field: 'retorno', content: JSON.stringify(rows), filename: 'retorno.json' });
const txtFile = (text: string): UploadFile => ({ field: 'txt', content: Buffer.from(text, 'latin1'), filename: 'censo.txt' });

async function upload(server: TestServer, route: string, files: UploadFile[]) {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body: await formWith(files) });
  return { response, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** Three schools, each its whole block (00 → 60), and persons to correct in the first and last. */
function escolas(): { txt: string; rows: object[]; corrigido: string } {
  const block = (inep: string, codigo: string, nome: string) => [
    SCHOOL.replace('12345678', inep),
    `10|${inep}|1|0|1`,
    `20|${inep}|TURMA A|1|0`,
    record30(codigo, { nome }),
    `40|${inep}|${codigo}|1`,
    `50|${inep}|${codigo}|1`,
    `60|${inep}|${codigo}|1`,
  ];
  const lines = [
    ...block('11111111', 'A1', 'ANA LIMA'),
    ...block('22222222', 'B1', 'BIA LIMA'),
    ...block('33333333', 'C1', 'CAIO LIMA'),
    '99|',
  ];
  const rows = [
    {
      Registro: '30',
      Linha: '4',
      'Código na Escola': 'A1',
      Campo: 'Nome completo',
      Mensagem: 'Não confere com a Receita Federal.',
      Conteúdo: 'ANA LIMA -- Ana de Lima',
    },
    {
      Registro: '30',
      Linha: '18',
      'Código na Escola': 'C1',
      Campo: 'Nome completo',
      Mensagem: 'Não confere com a Receita Federal.',
      Conteúdo: 'CAIO LIMA -- Caio Lima Neto',
    },
  ];
  const corrigido = [...lines];
  corrigido[3] = record30('A1', { nome: 'ANA DE LIMA' });
  corrigido[17] = record30('C1', { nome: 'CAIO LIMA NETO' });
  return { txt: lines.join('\r\n') + '\r\n', rows, corrigido: corrigido.join('\r\n') + '\r\n' };
}

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

  it.each(CASOS)('$regra', async (caso: Caso) => {
    const listed = await upload(server, '/api/divergencias-rf', [retornoFile(retornoDe(caso))]);
    expect(listed.response.status).toBe(200);
    const { divergencias } = JSON.parse(listed.bytes.toString('utf8')) as { divergencias: Array<{ correcao: string }> };
    expect(divergencias.map((d) => d.correcao)).toEqual(caso.correcao);

    const { response, bytes } = await upload(server, '/api/censo-corrigido', [retornoFile(retornoDe(caso)), txtFile(txtDe(caso))]);
    expect(response.status).toBe(200);
    expect(response.headers.get('censo-correcoes-nao-aplicadas')).toBe(String(caso.naoAplicadas));
    expect(response.headers.get('censo-pessoas-corrigidas')).toBe(caso.linha === null ? '0' : '1');
    expect(response.headers.get('censo-pessoas-regra-25')).toBe(caso.regra25 ? '1' : '0');
    expect(bytes.toString('latin1')).toBe(corrigidoDe(caso));
  });

  it('several schools: every line and field it does not correct comes back byte for byte, in ISO-8859-1, 99| last', async () => {
    const { txt, rows, corrigido } = escolas();
    const { response, bytes } = await upload(server, '/api/censo-corrigido', [retornoFile(rows), txtFile(txt)]);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=ISO-8859-1');
    expect(bytes.equals(Buffer.from(corrigido, 'latin1'))).toBe(true);
  });

  it('a txt without its record 99 gets it; one of 101 schools is refused (400), whole', async () => {
    const { txt, rows, corrigido } = escolas();
    const without = await upload(server, '/api/censo-corrigido', [retornoFile(rows), txtFile(txt.replace('99|\r\n', ''))]);
    expect(without.response.status).toBe(200);
    expect(without.bytes.toString('latin1')).toBe(corrigido);

    const many = Array.from({ length: 101 }, (_, i) => `${SCHOOL.replace('12345678', String(40000000 + i))}\r\n`).join('');
    const refused = await upload(server, '/api/censo-corrigido', [retornoFile(rows), txtFile(txt.replace('99|\r\n', many + '99|\r\n'))]);
    expect(refused.response.status).toBe(400);
    expect(JSON.parse(refused.bytes.toString('utf8'))).toEqual({
      erro: 'O arquivo txt tem 104 escolas; o Educacenso aceita no máximo 100 escolas por arquivo. Divida-o em arquivos de até 100 escolas.',
    });
  });
});
