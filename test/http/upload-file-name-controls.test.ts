// Issue 50: a client's file name carrying NUL or bidi controls (U+202E shows `a‮nosj.exe` as
// `aexe.json`) passed into the batch's `arquivo` (JSON, CSV), the task monitor and the download
// names. Sent here as raw multipart bytes, so nothing between the test and the service escapes
// them, and read back from every place the name is written.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../helpers/csv.js';
import { FIXTURES_DIR } from '../helpers/fixtures.js';
import { API_KEY } from '../helpers/http.js';
import { request, startHarness, waitForTarefa, type Harness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

// The basico case by its paths: the fixture list as a whole is not what this file is about.
const basico = {
  retorno: { json: path.join(FIXTURES_DIR, 'basico/retorno.json') },
  txt: path.join(FIXTURES_DIR, 'basico/censo.txt'),
};

// NUL, ESC, DEL, a C1 control, the bidi controls (LRM, RLM, LRE…RLO, LRI…PDI, ALM), a zero-width
// joiner, a BOM and the line separator: every one invisible, every one removed.
const CONTROLS = '\u0000\u001b\u007f\u0085\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c\u200d\ufeff\u2028';
const HOSTILE_NAME = `esc${CONTROLS}ola-a\u202e.json`;
const CLEAN_NAME = 'escola-a.json';

/** A multipart body written byte by byte: the file name's characters as UTF-8, nothing escaped. */
function multipart(parts: ReadonlyArray<{ name: string; filename?: string; content: Buffer | string }>): { body: Buffer; type: string } {
  const boundary = `----censo${randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const filename = part.filename === undefined ? '' : `; filename="${part.filename}"`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${filename}\r\n\r\n`, 'utf8'));
    chunks.push(Buffer.isBuffer(part.content) ? part.content : Buffer.from(part.content, 'utf8'));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

let server: Harness;
beforeAll(async () => {
  server = await startHarness('embedded', { redisUrl: '' });
});
afterAll(async () => {
  await server?.dispose();
});

async function postRaw(route: string, parts: Parameters<typeof multipart>[0]): Promise<Response> {
  const { body, type } = multipart(parts);
  return fetch(`${server.url}${route}`, { method: 'POST', headers: { 'x-api-key': API_KEY, 'content-type': type }, body });
}

describe('client file names lose their control and bidi characters where they are taken in', () => {
  it('in a batch: the task monitor, the divergencias JSON and CSV carry the clean name', async () => {
    const created = await request(server, 'POST', '/api/lotes', { body: '{}', headers: { 'content-type': 'application/json' } });
    const lote = created.json().id as string;
    const sent = await postRaw(`/api/lotes/${lote}/divergencias-rf`, [
      { name: 'retorno', filename: HOSTILE_NAME, content: await readFile(basico.retorno.json) },
    ]);
    expect(sent.status).toBe(202);
    const tarefa = (await sent.json()) as { id: string; arquivos: Array<{ nome: string }> };
    expect(tarefa.arquivos[0]!.nome).toBe(CLEAN_NAME);
    await waitForTarefa(server, tarefa.id);
    await request(server, 'POST', `/api/lotes/${lote}/fechar`);
    await waitFor(async () => (await request(server, 'GET', `/api/lotes/${lote}`)).json().estado === 'concluido', {
      timeoutMs: onThisMachine(20_000),
      what: 'batch concluido',
    });

    const json = (await request(server, 'GET', `/api/lotes/${lote}/divergencias`)).json() as { divergencias: Array<{ arquivo: string }> };
    expect(json.divergencias.length).toBeGreaterThan(0);
    expect(new Set(json.divergencias.map((d) => d.arquivo))).toEqual(new Set([CLEAN_NAME]));
    const csv = parseCsv((await request(server, 'GET', `/api/lotes/${lote}/divergencias?format=csv`)).bytes.toString('utf8'));
    expect(new Set(csv.slice(1).map((row) => row[1]))).toEqual(new Set([CLEAN_NAME]));
  });

  it('in a synchronous answer: the corrected file is named after the clean txt name', async () => {
    const answer = await postRaw('/api/censo-corrigido', [
      { name: 'retorno', filename: 'retorno.json', content: await readFile(basico.retorno.json) },
      { name: 'txt', filename: `meu${CONTROLS}censo\u202e.txt`, content: await readFile(basico.txt) },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-disposition')).toBe('attachment; filename="meucenso-corrigido.txt"');
  });

  it('the extension is judged on the clean name, the one written back', async () => {
    const answer = await postRaw('/api/divergencias-rf', [
      { name: 'retorno', filename: `retorno.json${CONTROLS}`, content: await readFile(basico.retorno.json) },
    ]);
    expect(answer.status).toBe(200);
    const refused = await postRaw('/api/divergencias-rf', [{ name: 'retorno', filename: `retorno\u202enosj.txt`, content: '[]' }]);
    expect(refused.status).toBe(400);
  });
});
