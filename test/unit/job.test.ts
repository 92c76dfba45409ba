import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_LINES_FILE, DIVERGENCIA_COLUMNS, cellValues, csvLine, runJob } from '@censo/shared';

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-job-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: string | Buffer): Promise<string> {
  const p = path.join(dir, `${n++}-${name}`);
  await writeFile(p, content);
  return p;
}
const result = () => path.join(dir, `${n++}-result.json`);

const RF = 'O campo não está de acordo com a base da Receita Federal.';
function retornoRow(linha: string, codigo: string, campo: string, conteudo: string, mensagem = RF) {
  return { Registro: '30', Linha: linha, 'Código na Escola': codigo, Campo: campo, Mensagem: mensagem, Conteúdo: conteudo };
}
const TXT = ['00|1|ESCOLA', '30|1|ALU1|123|111|ANA|2014-03-15|1|MAE|PAI', '30|1|ALU2|456|222|BIA|01/01/2015|1|MAE2|', '99|'].join('\n');

describe('runJob', () => {
  it('writes the divergencias body as compact JSON and counts its bytes', async () => {
    const retorno = await file(
      'r.json',
      JSON.stringify([
        retornoRow('2', 'ALU1', 'CPF', '111 -- 999'),
        retornoRow('3', 'ALU2', 'Sexo', '1 -- 2', 'outro erro'),
        retornoRow('3', 'ALU2', 'Nome', 'BIA -- BEATRIZ'),
      ]),
    );
    const resultPath = result();
    const r = await runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath });
    const body = await readFile(resultPath, 'utf8');
    // A bare array names no school: escola null (issue 54).
    expect(r).toEqual({ ok: true, count: 2, bytes: Buffer.byteLength(body), escola: null });
    expect(body).toBe(
      '{"divergencias":[{"codigo_na_escola":"ALU1","linha":"2","campo":"CPF","enviado":"111","correto":"999","is_filiacao":false,"chave":"cpf",' +
        '"correcao":"formulario"},{"codigo_na_escola":"ALU2","linha":"3","campo":"Nome","enviado":"BIA","correto":"BEATRIZ",' +
        '"is_filiacao":false,"chave":"nome","correcao":"arquivo"}]}',
    );
  });

  it("a batch's task also writes each divergence as its line of the batch's combined CSV, its leading fields first", async () => {
    const retorno = await file(
      'r.json',
      JSON.stringify([retornoRow('2', 'ALU1', 'CPF', '111 -- 999'), retornoRow('3', 'ALU2', 'Nome', '=BIA -- "BEATRIZ", B')]),
    );
    // Beside the result, in the task's own folder.
    const resultPath = path.join(await mkdtemp(path.join(dir, 'area-')), 'resultado');
    const lines = path.join(path.dirname(resultPath), BATCH_LINES_FILE);
    const leading = ['regional 1/escola, "A"', 'é.json'];
    const r = await runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath, batchLines: leading });
    expect(r).toMatchObject({ ok: true, count: 2 });
    const divergencias = JSON.parse(await readFile(resultPath, 'utf8')).divergencias as object[];
    expect(await readFile(lines, 'utf8')).toBe(
      divergencias.map((d) => csvLine([...leading, ...cellValues(d, DIVERGENCIA_COLUMNS)])).join(''),
    );
    expect(await readFile(lines, 'utf8')).toBe(
      '"regional 1/escola, ""A""",é.json,ALU1,2,CPF,111,999,false,cpf,formulario\r\n' +
        '"regional 1/escola, ""A""",é.json,ALU2,3,Nome,\'=BIA,"""BEATRIZ"", B",false,nome,arquivo\r\n',
    );
  });

  it("a batch's task that fails leaves neither its result nor its lines", async () => {
    const retorno = await file('r.json', '{"não é": "uma lista"}');
    const resultPath = path.join(await mkdtemp(path.join(dir, 'area-')), 'resultado');
    const lines = path.join(path.dirname(resultPath), BATCH_LINES_FILE);
    const r = await runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath, batchLines: ['a'] });
    expect(r.ok).toBe(false);
    expect([existsSync(resultPath), existsSync(lines)]).toEqual([false, false]);
  });

  it('writes an empty list when nothing diverges', async () => {
    const retorno = await file('r.json', JSON.stringify([retornoRow('2', 'ALU1', 'Sexo', '1', 'outro erro')]));
    const resultPath = result();
    expect(await runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath })).toEqual({
      ok: true,
      count: 0,
      bytes: 19,
      escola: null,
    });
    expect(await readFile(resultPath, 'utf8')).toBe('{"divergencias":[]}');
    const pessoasPath = result();
    const txt = await file('c.txt', TXT);
    expect(
      await runJob({ kind: 'retorno-rf', retorno: { path: retorno, format: 'json' }, txt: { path: txt }, resultPath: pessoasPath }),
    ).toEqual({
      ok: true,
      count: 0,
      bytes: 14,
    });
    expect(await readFile(pessoasPath, 'utf8')).toBe('{"pessoas":[]}');
  });

  it('writes the pessoas body', async () => {
    const retorno = await file(
      'r.json',
      JSON.stringify([retornoRow('3', 'ALU2', 'Nome', 'BIA -- BEATRIZ'), retornoRow('2', 'ALU1', 'CPF', '111 -- 999')]),
    );
    const txt = await file('c.txt', TXT);
    const resultPath = result();
    const r = await runJob({ kind: 'retorno-rf', retorno: { path: retorno, format: 'json' }, txt: { path: txt }, resultPath });
    expect(r).toEqual({ ok: true, count: 2, bytes: (await stat(resultPath)).size });
    expect(JSON.parse(await readFile(resultPath, 'utf8'))).toEqual({
      pessoas: [
        {
          ...{ codigo_na_escola: 'ALU1', linha: '2', cpf: '999', nome: 'ANA', data_nascimento: '15/03/2014', inep: '123', nome_mae: 'MAE' },
          // What the corrected file writes: the sent CPF, since the Receita's is no CPF, and the txt's own date.
          ...{
            arquivo_cpf: '111',
            arquivo_nome: 'ANA',
            arquivo_data_nascimento: '2014-03-15',
            arquivo_inep: '123',
            arquivo_nome_mae: 'MAE',
          },
          nao_aplicadas: 'CPF: o valor da Receita Federal não cabe no layout do INEP',
          regra_25: false,
        },
        {
          ...{
            codigo_na_escola: 'ALU2',
            linha: '3',
            cpf: '222',
            nome: 'BEATRIZ',
            data_nascimento: '01/01/2015',
            inep: '456',
            nome_mae: 'MAE2',
          },
          ...{
            arquivo_cpf: '222',
            arquivo_nome: 'BEATRIZ',
            arquivo_data_nascimento: '01/01/2015',
            arquivo_inep: '456',
            arquivo_nome_mae: 'MAE2',
          },
          nao_aplicadas: '',
          regra_25: false,
        },
      ],
    });
  });

  it('answers a txt mismatch as a 422 result and leaves no result file', async () => {
    const retorno = await file(
      'r.json',
      JSON.stringify([retornoRow('2', 'ALU1', 'CPF', '1 -- 2'), retornoRow('4', 'ALU2', 'CPF', '1 -- 2')]),
    );
    const txt = await file('c.txt', TXT);
    const resultPath = result();
    expect(await runJob({ kind: 'retorno-rf', retorno: { path: retorno, format: 'json' }, txt: { path: txt }, resultPath })).toEqual({
      ok: false,
      status: 422,
      code: 'TXT_MISMATCH',
      erro: 'O arquivo txt não corresponde ao retorno (linha 4).',
    });
    expect(existsSync(resultPath)).toBe(false);
  });

  it('answers a mismatch by code when the return has no linha column', async () => {
    const rows = [{ 'Código na Escola': 'ALU9', Campo: 'CPF', Mensagem: RF, Conteúdo: '1 -- 2' }];
    const retorno = await file('r.json', JSON.stringify(rows));
    const txt = await file('c.txt', TXT);
    expect(
      await runJob({ kind: 'retorno-rf', retorno: { path: retorno, format: 'json' }, txt: { path: txt }, resultPath: result() }),
    ).toEqual({
      ok: false,
      status: 422,
      code: 'TXT_MISMATCH',
      erro: 'O arquivo txt não corresponde ao retorno (código ALU9).',
    });
  });

  it.each(['divergencias', 'retorno-rf'] as const)(
    'answers an unreadable return (%s) as a 400 result and leaves no result file',
    async (kind) => {
      // Rows already streamed out before the reader fails must not survive either.
      const rows = Array.from({ length: 5000 }, (_, i) => JSON.stringify(retornoRow('2', 'ALU1', 'CPF', `${i} -- 9`)));
      const retorno = await file('r.json', `[${rows.join(',')},{"Campo": `);
      const txt = await file('c.txt', TXT);
      const resultPath = result();
      const base = { retorno: { path: retorno, format: 'json' as const }, resultPath };
      const r = await runJob(kind === 'divergencias' ? { kind, ...base } : { kind, ...base, txt: { path: txt } });
      expect(r).toMatchObject({ ok: false, status: 400, code: 'BAD_INPUT' });
      expect(r.ok === false && r.erro.startsWith('Arquivo retorno ilegível: ')).toBe(true);
      expect(existsSync(resultPath)).toBe(false);
    },
  );

  it('rethrows what is not a domain failure (a missing upload) and leaves no result file', async () => {
    const retorno = await file('r.json', JSON.stringify([retornoRow('2', 'ALU1', 'CPF', '1 -- 2')]));
    const resultPath = result();
    await expect(
      runJob({ kind: 'retorno-rf', retorno: { path: retorno, format: 'json' }, txt: { path: path.join(dir, 'missing.txt') }, resultPath }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
    expect(existsSync(resultPath)).toBe(false);
  });

  it('rejects with an AbortError when aborted', async () => {
    const retorno = await file('r.json', '[]');
    const resultPath = result();
    await expect(
      runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath }, { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(existsSync(resultPath)).toBe(false);
  });

  it('removes the partial result file when aborted mid-way', async () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => JSON.stringify(retornoRow('2', 'ALU1', 'CPF', `${i} -- 9`)));
    const retorno = await file('r.json', `[${rows.join(',')}]`);
    const resultPath = result();
    const controller = new AbortController();
    const running = runJob({ kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath }, { signal: controller.signal });
    // Abort once the result file is open: the job is then mid-way (its divergences are written once
    // the return has been read whole, since each one's `correcao` weighs its person's others).
    for (let waited = 0; !existsSync(resultPath); waited++) {
      expect(waited, 'the job never opened its result').toBeLessThan(2_000);
      await new Promise((r) => setTimeout(r, 5));
    }
    controller.abort();
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
    expect(existsSync(resultPath)).toBe(false);
  });

  it("removes a batch's task's partial lines with its result when aborted mid-way", async () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => JSON.stringify(retornoRow('2', 'ALU1', 'CPF', `${i} -- 9`)));
    const retorno = await file('r.json', `[${rows.join(',')}]`);
    const resultPath = path.join(await mkdtemp(path.join(dir, 'area-')), 'resultado');
    const lines = path.join(path.dirname(resultPath), BATCH_LINES_FILE);
    const controller = new AbortController();
    const running = runJob(
      { kind: 'divergencias', retorno: { path: retorno, format: 'json' }, resultPath, batchLines: ['ref', 'r.json'] },
      { signal: controller.signal },
    );
    // Bounded: the job opens both files within a few ms of its start, then reads the return whole.
    for (let waited = 0; !existsSync(lines) || !existsSync(resultPath); waited++) {
      expect(waited, 'the job never opened its files').toBeLessThan(2_000);
      await new Promise((r) => setTimeout(r, 5));
    }
    controller.abort();
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
    expect([existsSync(resultPath), existsSync(lines)]).toEqual([false, false]);
  });
});
