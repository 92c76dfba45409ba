// COLUMNS_FILE over HTTP (SPEC §1.2): a return rejected with a header it does not know is read
// once an operator adds that header, in embedded and in queue mode (where the worker reads it).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, formWith, startTestServer, type TestServer } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';

let dir: string;
let redis: TestRedis;
let retorno: string;
let columns: string;
const prefixes: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-columns-'));
  redis = await startTestRedis();
  retorno = path.join(dir, 'retorno.json');
  await writeFile(
    retorno,
    JSON.stringify([
      {
        'Código na Escola': 'ALU1',
        Campo: 'CPF',
        'Descrição da inconsistência': 'Diverge da Receita Federal',
        Conteúdo: '1 -- 52998224725',
      },
    ]),
  );
  columns = path.join(dir, 'columns.json');
  await writeFile(columns, JSON.stringify({ mensagem: ['Descrição da inconsistência'] }));
});
afterAll(async () => {
  await Promise.all(prefixes.map((p) => deleteKeys(redis.url, p)));
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

async function post(server: TestServer) {
  const body = await formWith([{ field: 'retorno', path: retorno, filename: 'retorno.json' }]);
  const response = await fetch(`${server.url}/api/divergencias-rf`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body });
  return { status: response.status, body: await response.json() };
}

describe.each(['embedded', 'queue'] as const)('%s mode', (mode) => {
  const env = (): Record<string, string> => {
    if (mode === 'embedded') return {};
    const prefix = uniqueQueuePrefix();
    prefixes.push(prefix);
    return { REDIS_URL: redis.url, QUEUE_PREFIX: prefix };
  };

  it('without COLUMNS_FILE: 400 naming the headers found and the role missing', async () => {
    const server = await startTestServer(env());
    try {
      expect(await post(server)).toEqual({
        status: 400,
        body: {
          erro: 'Arquivo retorno ilegível: cabeçalho não reconhecido na lista de linhas (encontradas: Código na Escola, Campo, Descrição da inconsistência, Conteúdo; faltam: mensagem).',
        },
      });
    } finally {
      await server.dispose();
    }
  });

  it('with COLUMNS_FILE teaching the header: the divergence', async () => {
    const server = await startTestServer({ ...env(), COLUMNS_FILE: columns });
    try {
      expect(await post(server)).toEqual({
        status: 200,
        body: {
          divergencias: [
            {
              codigo_na_escola: 'ALU1',
              linha: '',
              campo: 'CPF',
              enviado: '1',
              correto: '52998224725',
              is_filiacao: false,
              chave: 'cpf',
              // A CPF already sent is not changed by migration (field 5 rule 10).
              correcao: 'formulario',
            },
          ],
        },
      });
    } finally {
      await server.dispose();
    }
  });
});
