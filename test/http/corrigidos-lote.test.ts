// Issue 56: a batch's corrected census files together, one per school, in a zip
// (GET /api/lotes/{id}/corrigidos): each part is byte for byte what its own task answers, named
// after its school; refused as /resumo is (another owner's or unknown id 404, 409 until concluded
// unless parcial), and a batch without a corrected file says how to send one.
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formWith } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import { request, startHarness, waitForTarefa, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { CASOS, retornoDe, txtDe } from '../helpers/reimportacao-casos.js';

const redis = useTestRedis();
let server: Harness;
const tarefas = new Map<string, string>();

const criarLote = async (): Promise<string> =>
  (await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } })).json().id as string;

/** Two schools of the re-import case table: their return and txt as a school sends them. */
const ESCOLAS: Readonly<Record<string, (typeof CASOS)[number]>> = {
  'Escola Alfa/2025': CASOS.find((c) => c.regra.startsWith('nome (regra 7)'))!,
  'Escola Beta': CASOS.find((c) => c.regra.startsWith('filiação, regra 4'))!,
};

let lote: string;
beforeAll(async () => {
  server = await startHarness('embedded', { redisUrl: redis.url });
  lote = await criarLote();
  for (const [referencia, caso] of Object.entries(ESCOLAS)) {
    const body = await formWith(
      [
        { field: 'retorno', content: JSON.stringify(retornoDe(caso)), filename: 'retorno.json' },
        { field: 'txt', content: Buffer.from(txtDe(caso), 'latin1'), filename: 'censo.txt' },
      ],
      { referencia },
    );
    const id = (await request(server, 'POST', `/api/lotes/${lote}/censo-corrigido`, { body })).json().id as string;
    await waitForTarefa(server, id);
    tarefas.set(referencia, id);
  }
  await request(server, 'POST', `/api/lotes/${lote}/fechar`);
  await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', { what: 'the batch' });
});
afterAll(async () => {
  await server?.dispose();
});

/** Every entry of a zip, name → bytes, as yauzl reads it (CRC-32 and sizes checked). */
async function unzip(bytes: Buffer): Promise<Map<string, Buffer>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, z) =>
      err ? reject(err) : resolve(z),
    ),
  );
  const found = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        (stream as Readable).on('data', (c: Buffer) => chunks.push(c));
        (stream as Readable).on('end', () => {
          found.set(entry.fileName, Buffer.concat(chunks));
          zip.readEntry();
        });
      });
    });
    zip.once('end', () => resolve());
    zip.once('error', reject);
    zip.readEntry();
  });
  return found;
}

describe("a batch's corrected files in one zip (issue 56)", () => {
  it('one part per school, named after it, each the bytes its own task answers', async () => {
    const answer = await request(server, 'GET', `/api/lotes/${lote}/corrigidos`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/zip');
    expect(answer.headers.get('content-disposition')).toBe(`attachment; filename="corrigidos-lote-${lote}.zip"`);
    const parts = await unzip(answer.bytes);
    expect([...parts.keys()]).toEqual(['Escola Alfa-2025-corrigido.txt', 'Escola Beta-corrigido.txt']);
    for (const [referencia, id] of tarefas) {
      const own = await request(server, 'GET', `/api/tarefas/${id}/resultado`);
      const name = `${referencia.replace('/', '-')}-corrigido.txt`;
      expect(parts.get(name)?.equals(own.bytes), name).toBe(true);
    }
    // The corrected file itself, as the case table says (ISO-8859-1, the mother as Educacenso holds her).
    expect(parts.get('Escola Beta-corrigido.txt')!.toString('latin1')).toContain('|1|ANA MARIA DA SILVA|');
  });

  it('refused as /resumo is: an unknown id 404, an open batch 409 unless parcial, a batch without corrected files 404 in words', async () => {
    expect((await request(server, 'GET', '/api/lotes/00000000-0000-4000-8000-000000000000/corrigidos')).status).toBe(404);
    const aberto = await criarLote();
    const body = await formWith(
      [
        { field: 'retorno', content: JSON.stringify(retornoDe(ESCOLAS['Escola Beta']!)), filename: 'retorno.json' },
        { field: 'txt', content: Buffer.from(txtDe(ESCOLAS['Escola Beta']!), 'latin1'), filename: 'censo.txt' },
      ],
      { referencia: 'Escola Gama' },
    );
    await waitForTarefa(server, (await request(server, 'POST', `/api/lotes/${aberto}/censo-corrigido`, { body })).json().id as string);
    expect((await request(server, 'GET', `/api/lotes/${aberto}/corrigidos`)).status).toBe(409);
    const parcial = await request(server, 'GET', `/api/lotes/${aberto}/corrigidos?parcial=true`);
    expect(parcial.status).toBe(200);
    expect([...(await unzip(parcial.bytes)).keys()]).toEqual(['Escola Gama-corrigido.txt']);

    const vazio = await criarLote();
    const retorno = await formWith([{ field: 'retorno', content: JSON.stringify(retornoDe(ESCOLAS['Escola Beta']!)), filename: 'r.json' }]);
    await waitForTarefa(
      server,
      (await request(server, 'POST', `/api/lotes/${vazio}/divergencias-rf`, { body: retorno })).json().id as string,
    );
    await request(server, 'POST', `/api/lotes/${vazio}/fechar`);
    await waitFor(async () => (await request(server, 'GET', `/api/lotes/${vazio}`)).json().estado === 'concluido', { what: 'the batch' });
    const none = await request(server, 'GET', `/api/lotes/${vazio}/corrigidos`);
    expect([none.status, none.json()]).toEqual([
      404,
      { erro: 'O lote não tem arquivos corrigidos: envie o retorno e o txt de cada escola em /api/lotes/{id}/censo-corrigido.' },
    ]);
  });
});
