// The corrected census file (SPEC §3.4) through runJob: hand-written inputs and the exact bytes
// expected back, then a property over random files: every line that is not a changed record 30
// comes back byte for byte, and a changed line keeps its field count and its other fields.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob, type JobResult } from '@censo/shared';

let dir: string;
let n = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-corrigido-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Row {
  readonly linha: string;
  readonly codigo: string;
  readonly campo: string;
  readonly conteudo: string;
  readonly mensagem?: string;
}

const RF = 'Divergência com a base da Receita Federal.';

async function corrigir(txt: Buffer, rows: readonly Row[]): Promise<{ result: JobResult; bytes: Buffer; pessoas: unknown[] }> {
  const id = n++;
  const txtPath = path.join(dir, `censo-${id}.txt`);
  const retornoPath = path.join(dir, `retorno-${id}.json`);
  await writeFile(txtPath, txt);
  const retorno = rows.map((r) => ({
    Registro: '30',
    Linha: r.linha,
    'Código na Escola': r.codigo,
    Campo: r.campo,
    Mensagem: r.mensagem ?? RF,
    Conteúdo: r.conteudo,
  }));
  await writeFile(retornoPath, JSON.stringify(retorno));
  const retornoFile = { path: retornoPath, format: 'json' as const };
  const result = await runJob({
    kind: 'censo-corrigido',
    retorno: retornoFile,
    txt: { path: txtPath },
    resultPath: path.join(dir, `out-${id}.txt`),
  });
  const pessoasPath = path.join(dir, `pessoas-${id}.json`);
  const pessoas = await runJob({ kind: 'retorno-rf', retorno: retornoFile, txt: { path: txtPath }, resultPath: pessoasPath });
  expect(pessoas.ok).toBe(true);
  const bytes = result.ok ? await readFile(path.join(dir, `out-${id}.txt`)) : Buffer.alloc(0);
  return { result, bytes, pessoas: (JSON.parse(await readFile(pessoasPath, 'utf8')) as { pessoas: unknown[] }).pessoas };
}

const latin1 = (text: string) => Buffer.from(text, 'latin1');

// A school line with Latin-1 accents (SÃO JOSÉ): not valid UTF-8, so the file is read as
// windows-1252 and its unchanged bytes must come back as they are.
const SCHOOL = '00|12345678|ESCOLA S\u00c3O JOS\u00c9|4205407';
const P1 = '30|12345678|ALU1|123456789012|52998224725|MARIA DA CONCEI\u00c7\u00c3O|14/03/2014|1|ANA|JOSE|2|3';
const P2 = '30|12345678|ALU2|||JO\u00c3O SILVA|1/7/2013|1|MARIA||2';
const P3 = '30|12345678|ALU3|||PEDRO LIMA|02/10/1980|1|LUCIA|PAULO';

describe('hand-written cases, byte for byte', () => {
  it('Latin-1, LF: CPF, INEP id, a name with accents and an apostrophe, a date in another shape', async () => {
    const txt = latin1(`${SCHOOL}\n${P1}\n${P2}\n99|\n`);
    const { result, bytes } = await corrigir(txt, [
      { linha: '2', codigo: 'ALU1', campo: 'Número do CPF', conteudo: '52998224725 -- 529.982.247-26' },
      { linha: '2', codigo: 'ALU1', campo: 'Identificação única (Inep)', conteudo: '123456789012 -- 123456789099' },
      { linha: '3', codigo: 'ALU2', campo: 'Nome completo', conteudo: "JOÃO SILVA -- João D'Ávila  da Silva" },
      { linha: '3', codigo: 'ALU2', campo: 'Data de nascimento', conteudo: '1/7/2013 -- 2013-07-02' },
    ]);
    expect(
      bytes.equals(
        latin1(
          `${SCHOOL}\n` +
            '30|12345678|ALU1|123456789099|52998224725|MARIA DA CONCEI\u00c7\u00c3O|14/03/2014|1|ANA|JOSE|2|3\n' +
            '30|12345678|ALU2|||JOAO DAVILA DA SILVA|02/07/2013|1|MARIA||2\n' +
            '99|\n',
        ),
      ),
    ).toBe(true);
    expect(result).toMatchObject({ ok: true, count: 2, corrigido: { pessoasCorrigidas: 2, naoAplicadas: 1 } });
  });

  it('keeps every line end as it was (CRLF, CR, LF mixed) and a missing final newline', async () => {
    const txt = latin1(`${SCHOOL}\r\n${P1}\r${P2}\n${P3}\r\n99|`);
    const { bytes } = await corrigir(txt, [
      { linha: '2', codigo: 'ALU1', campo: 'Identificação única (Inep)', conteudo: '123456789012 -- 123456789099' },
      { linha: '4', codigo: 'ALU3', campo: 'Nome', conteudo: 'PEDRO LIMA -- PEDRO DE LIMA' },
    ]);
    expect(
      bytes.equals(
        latin1(
          `${SCHOOL}\r\n` +
            '30|12345678|ALU1|123456789099|52998224725|MARIA DA CONCEI\u00c7\u00c3O|14/03/2014|1|ANA|JOSE|2|3\r' +
            `${P2}\n` +
            '30|12345678|ALU3|||PEDRO DE LIMA|02/10/1980|1|LUCIA|PAULO\r\n99|',
        ),
      ),
    ).toBe(true);
  });

  it('UTF-8 with BOM and CRLF: re-encoded to ISO-8859-1, BOM dropped, a character Latin-1 lacks becomes ?', async () => {
    const txt = Buffer.from(
      `\ufeff00|12345678|ESCOLA SÃO JOSÉ €\r\n${'30|12345678|ALU1|||MARIA DA CONCEIÇÃO|14/03/2014|1|ANA|JOSE'}\r\n99|\r\n`,
      'utf8',
    );
    const { bytes, result } = await corrigir(txt, [
      { linha: '2', codigo: 'ALU1', campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15032014' },
    ]);
    expect(
      bytes.equals(
        latin1(
          '00|12345678|ESCOLA S\u00c3O JOS\u00c9 ?\r\n30|12345678|ALU1|||MARIA DA CONCEI\u00c7\u00c3O|15/03/2014|1|ANA|JOSE\r\n99|\r\n',
        ),
      ),
    ).toBe(true);
    expect(result).toMatchObject({ corrigido: { pessoasCorrigidas: 1, naoAplicadas: 0 } });
  });

  it('a windows-1252 byte (0x80, €) in an unchanged field stays that byte', async () => {
    const txt = Buffer.concat([latin1(`${SCHOOL}\n30|12345678|ALU1|||ANA|01/01/2010|1|M|P|`), Buffer.from([0x80]), latin1('\n99|\n')]);
    const { bytes } = await corrigir(txt, [{ linha: '2', codigo: 'ALU1', campo: 'CPF', conteudo: ' -- 52998224725' }]);
    expect(
      bytes.equals(
        Buffer.concat([latin1(`${SCHOOL}\n30|12345678|ALU1||52998224725|ANA|01/01/2010|1|M|P|`), Buffer.from([0x80]), latin1('\n99|\n')]),
      ),
    ).toBe(true);
  });

  it("values the layout cannot hold are not applied and are counted; pessoas still shows the tax authority's value", async () => {
    const txt = latin1(`${SCHOOL}\n${P1}\n${P3}\n99|\n`);
    const { bytes, result, pessoas } = await corrigir(txt, [
      { linha: '2', codigo: 'ALU1', campo: 'CPF', conteudo: '52998224725 -- 123' },
      { linha: '2', codigo: 'ALU1', campo: 'Data de nascimento', conteudo: '14/03/2014 -- 31 de março' },
      { linha: '3', codigo: 'ALU3', campo: 'Nome', conteudo: "PEDRO LIMA -- '-.'" },
      { linha: '3', codigo: 'ALU3', campo: 'Código INEP', conteudo: ' -- 12345' },
    ]);
    expect(bytes.equals(txt)).toBe(true);
    expect(result).toMatchObject({ ok: true, count: 2, corrigido: { pessoasCorrigidas: 0, naoAplicadas: 4 } });
    expect(pessoas).toMatchObject([
      { linha: '2', cpf: '123', data_nascimento: '31 de março' },
      { linha: '3', nome: "'-.'", inep: '12345' },
    ]);
  });

  it("a person with only a mother's divergence gets filiação 1 as the Receita (and Educacenso) has it, nothing else", async () => {
    const txt = latin1(`${SCHOOL}\n${P1}\n99|\n`);
    const { bytes, result, pessoas } = await corrigir(txt, [
      {
        linha: '2',
        codigo: 'ALU1',
        campo: 'Filiação 1',
        conteudo: 'ANA -- Ana Maria',
        mensagem: 'Nome da mãe diverge da Receita Federal.',
      },
    ]);
    expect(bytes.toString('latin1')).toBe(latin1(`${SCHOOL}\n${P1}\n99|\n`).toString('latin1').replace('|1|ANA|', '|1|ANA MARIA|'));
    expect(pessoas).toMatchObject([{ nome_mae: 'ANA', arquivo_nome_mae: 'ANA MARIA', nao_aplicadas: '' }]);
    expect(result).toMatchObject({ ok: true, count: 1, corrigido: { pessoasCorrigidas: 1, naoAplicadas: 0 } });
  });

  it("a father's divergence is a person of pessoas, changes no byte and counts as not applied", async () => {
    const txt = latin1(`${SCHOOL}\n${P1}\n99|\n`);
    const { bytes, result, pessoas } = await corrigir(txt, [
      {
        linha: '2',
        codigo: 'ALU1',
        campo: 'Filiação 2',
        conteudo: 'JOSE -- JOSE MARIA',
        mensagem: 'Nome do pai diverge da Receita Federal.',
      },
    ]);
    expect(bytes.equals(txt)).toBe(true);
    expect(pessoas).toMatchObject([
      { nao_aplicadas: 'Filiação 2: o arquivo corrigido não altera a filiação 2, e a Receita Federal não guarda o nome do pai' },
    ]);
    expect(result).toMatchObject({ ok: true, count: 1, corrigido: { pessoasCorrigidas: 0, naoAplicadas: 1 } });
  });

  it('a name longer than 100 characters is cut at 100', async () => {
    const txt = latin1(`${SCHOOL}\n${P3}\n99|\n`);
    const long = 'A'.repeat(60) + ' ' + 'B'.repeat(60);
    const { bytes } = await corrigir(txt, [{ linha: '2', codigo: 'ALU3', campo: 'Nome', conteudo: `PEDRO LIMA -- ${long}` }]);
    expect(bytes.toString('latin1')).toBe(
      `${SCHOOL}\n30|12345678|ALU3|||${'A'.repeat(60)} ${'B'.repeat(39)}|02/10/1980|1|LUCIA|PAULO\n99|\n`,
    );
  });

  it('a mismatch is the 422 of retorno-rf and writes nothing', async () => {
    const txt = latin1(`${SCHOOL}\n${P1}\n`);
    const id = n++;
    const txtPath = path.join(dir, `m-${id}.txt`);
    const retornoPath = path.join(dir, `m-${id}.json`);
    await writeFile(txtPath, txt);
    await writeFile(
      retornoPath,
      JSON.stringify([{ Registro: '30', Linha: '1', 'Código na Escola': 'ALU1', Campo: 'CPF', Mensagem: RF, Conteúdo: '1 -- 2' }]),
    );
    const resultPath = path.join(dir, `m-${id}.out`);
    const answer = await runJob({
      kind: 'censo-corrigido',
      retorno: { path: retornoPath, format: 'json' },
      txt: { path: txtPath },
      resultPath,
    });
    expect(answer).toEqual({ ok: false, status: 422, code: 'TXT_MISMATCH', erro: 'O arquivo txt não corresponde ao retorno (linha 1).' });
    await expect(readFile(resultPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('property: only the corrected fields of changed record-30 lines differ', () => {
  const text = fc.stringMatching(/^[A-Za-z0-9 \u00c0-\u00ff.,'-]{0,12}$/);
  const end = fc.constantFrom('\n', '\r\n', '\r');
  const line = fc.oneof(
    fc.record({
      kind: fc.constant('30' as const),
      fields: fc.array(text, { minLength: 8, maxLength: 14 }),
      // Field 8 (filiação): declared, not declared or any text, so that rule 4 of filiação 1 is met often.
      filiacao: fc.constantFrom('1', '0', null),
      end,
    }),
    fc.record({ kind: fc.constantFrom('10', '20', '40', '60'), fields: fc.array(text, { minLength: 1, maxLength: 6 }), end }),
  );
  const CHAVES = [
    ['CPF', () => fc.oneof(fc.stringMatching(/^\d{11}$/), text)],
    ['Nome', () => text],
    ['Data de nascimento', () => fc.oneof(fc.constant('2014-03-15'), fc.constant('1/2/2010'), text)],
    ['Identificação única (Inep)', () => fc.oneof(fc.stringMatching(/^\d{12}$/), text)],
    ['Filiação 1', () => text],
  ] as const;

  it('holds for random files and returns', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { minLength: 1, maxLength: 25 }),
        fc.boolean(),
        fc.infiniteStream(fc.nat()),
        async (lines, finalNewline, picks) => {
          const it = picks[Symbol.iterator]();
          const next = () => it.next().value as number;
          const records = lines.map((l, i) =>
            l.kind === '30'
              ? `30|1|C${i}|${l.fields.map((field, k) => (k === 4 && l.filiacao !== null ? l.filiacao : field)).join('|')}`
              : `${l.kind}|${l.fields.join('|')}`,
          );
          // Every line ends; the record 99 INEP requires last, with or without a final newline.
          const body = records.map((r, i) => r + lines[i]!.end).join('');
          const txt = latin1(`${SCHOOL}\n${body}99|${finalNewline ? '\n' : ''}`);
          const rows: Row[] = [];
          records.forEach((record, i) => {
            if (!record.startsWith('30|') || next() % 2 === 0) return;
            const [campo, value] = CHAVES[next() % CHAVES.length]!;
            const correct = fc.sample(value(), { seed: next(), numRuns: 1 })[0]!;
            if (correct.trim() === '') return;
            rows.push({ linha: String(i + 2), codigo: `C${i}`, campo, conteudo: `x -- ${correct}` });
          });
          const { bytes, result } = await corrigir(txt, rows);
          expect(result.ok).toBe(true);
          const split = (b: Buffer) => b.toString('latin1').split(/\r\n|\r|\n/);
          const before = split(txt);
          const after = split(bytes);
          expect(after.length).toBe(before.length);
          // Line ends, line by line: the same separators in the same places.
          expect(bytes.toString('latin1').replace(/[^\r\n]/g, '')).toBe(txt.toString('latin1').replace(/[^\r\n]/g, ''));
          const changed = new Set(rows.map((r) => Number(r.linha) - 1));
          const mothers = new Set(rows.filter((r) => r.campo === 'Filiação 1').map((r) => Number(r.linha) - 1));
          before.forEach((old, i) => {
            if (!changed.has(i)) return expect(after[i]).toBe(old);
            const a = old.split('|');
            const b = after[i]!.split('|');
            expect(b.length).toBe(a.length);
            a.forEach((field, f) => {
              if (f >= 3 && f <= 6) return;
              // Field 9 (index 8, filiação 1) may take the Receita's mother's name (SPEC §3.4, §11
              // rule 4): only on a line with that divergence whose field 8 declares a filiation.
              if (f === 8 && b[f] !== field) {
                expect(mothers.has(i), `line ${i + 1}: filiação 1 changed without its divergence`).toBe(true);
                expect(a[7], `line ${i + 1}: filiação 1 written without a declared filiation`).toBe('1');
                return;
              }
              expect(b[f]).toBe(field);
            });
          });
        },
      ),
      { numRuns: 60 },
    );
  });
});
