// A letter per school (issue 56) through the core: each school's counts per `correcao` and its
// sentence, the persons it must act on (grafia left out), every value escaped on the printable
// page, and the family's notice only for a person only the Receita Federal can mend.
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { Cartas, cartasChunks, fraseDaCarta, type CartasFormat, type DivergenciaCarta } from '@censo/shared';

const d = (
  referencia: string,
  codigo: string,
  linha: string,
  chave: DivergenciaCarta['chave'],
  correcao: DivergenciaCarta['correcao'],
  enviado = 'ENVIADO',
  correto = 'RECEITA',
): DivergenciaCarta => ({ referencia, codigo_na_escola: codigo, linha, campo: chave ?? 'Cor/Raça', enviado, correto, chave, correcao });

/** School A: 3 on the form, 2 for the citizen (one the father: no notice), 1 already in Educacenso, 4 spelling only. */
function batch(): Cartas {
  const cartas = new Cartas();
  cartas.escola('escola-a');
  cartas.escola('escola-sem-nada');
  for (const item of [
    d('escola-a', 'A1', '2', 'cpf', 'formulario', '11111111111', '11111111122'),
    d('escola-a', 'A2', '3', null, 'formulario'),
    d('escola-a', 'A3', '4', 'inep', 'formulario'),
    d('escola-a', 'A4', '5', 'data_nascimento', 'receita', '01/01/2010', '31/02/2010'),
    d('escola-a', 'A5', '6', 'nome_pai', 'receita'),
    d('escola-a', 'A6', '7', 'nome_mae', 'educacenso'),
    ...['A7', 'A8', 'A9', 'A10'].map((codigo, i) => d('escola-a', codigo, String(8 + i), 'nome', 'grafia', 'Maria', 'MARIA')),
    d('escola-b', 'B1', '2', 'nome', 'grafia'),
  ])
    cartas.divergencia(item);
  return cartas;
}

async function text(cartas: Cartas, format: CartasFormat): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of cartasChunks(cartas, format)) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

describe('the letters of a batch', () => {
  it('counts each school per correcao and says what to do in a sentence, in file order', () => {
    const escolas = batch().escolas;
    expect(escolas.map((e) => e.referencia)).toEqual(['escola-a', 'escola-sem-nada', 'escola-b']);
    expect(escolas[0]!.contagem).toEqual({ arquivo: 0, educacenso: 1, formulario: 3, receita: 2, grafia: 4, sem_correcao: 0 });
    expect(fraseDaCarta(escolas[0]!.contagem)).toBe(
      '3 no formulário do Educacenso, 2 para o cidadão na Receita Federal, 1 já no Educacenso (corrija só no sistema da escola); ' +
        '4 só de grafia, nada a fazer.',
    );
    expect(fraseDaCarta(escolas[1]!.contagem)).toBe('Nenhuma divergência: nada a fazer.');
    expect(fraseDaCarta(escolas[2]!.contagem)).toBe('1 só de grafia, nada a fazer.');
  });

  it('the workbook: a row per school with its counts as numbers, a row per divergence to act on (no grafia), school first', async () => {
    const book = new ExcelJS.Workbook();
    await book.xlsx.load((await text(batch(), 'xlsx')) as unknown as ExcelJS.Buffer);
    expect(book.worksheets.map((sheet) => sheet.name)).toEqual(['escolas', 'pessoas']);
    const escolas = book.getWorksheet('escolas')!;
    const a = escolas.getRow(2);
    expect(a.getCell(1).value).toBe('escola-a');
    // Divergências, formulario, receita, arquivo, educacenso, grafia, sem indicação.
    expect([2, 3, 4, 5, 6, 7, 8].map((column) => a.getCell(column).value)).toEqual([10, 3, 2, 0, 1, 4, 0]);
    for (const column of [2, 3, 4, 5, 6, 7, 8]) expect(a.getCell(column).type).toBe(ExcelJS.ValueType.Number);
    expect(a.getCell(9).value).toBe(fraseDaCarta(batch().escolas[0]!.contagem));
    const pessoas = book.getWorksheet('pessoas')!;
    expect(pessoas.getRow(1).getCell(1).value).toBe('Referência (escola)');
    const rows = Array.from({ length: pessoas.rowCount - 1 }, (_, i) => pessoas.getRow(i + 2));
    expect(rows.map((row) => [row.getCell(1).value, row.getCell(2).value])).toEqual(
      ['A1', 'A2', 'A3', 'A4', 'A5', 'A6'].map((codigo) => ['escola-a', codigo]),
    );
    expect(rows[0]!.getCell(8).value).toBe('Formulário do Educacenso');
    expect(String(rows[0]!.getCell(9).value)).toMatch(/regra 10 do CPF/);
    for (const sheet of [escolas, pessoas]) {
      expect(sheet.autoFilter, sheet.name).toBe(`A1:${sheet.getColumn(sheet.columnCount).letter}${sheet.rowCount}`);
      expect(sheet.views[0], sheet.name).toMatchObject({ state: 'frozen', ySplit: 1 });
    }
  });

  it('the page: a section per school, a page break each, grafia left out, the notice only for a Receita case', async () => {
    const html = (await text(batch(), 'html')).toString('utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html.match(/<section class="carta">/g)).toHaveLength(3);
    expect(html).toMatch(/@media print \{[^@]*\n {2}\.carta \{ break-after: page;/);
    // Nothing loaded from anywhere.
    expect(html).not.toMatch(/<script|<link|<img|src=|href=|url\(/i);
    const [, a, nada, b] = html.split('<section class="carta">');
    expect(a).toContain('<td>A4</td>');
    expect(a).not.toContain('<td>A7</td>');
    // One notice: the birth date; the father's name is confirmed with the family, not at the Receita.
    expect(a!.match(/class="aviso"/g)).toHaveLength(1);
    expect(a).toContain('Estudante (código na escola): A4.');
    expect(a).toContain('documento de identidade e a certidão de nascimento ou de casamento');
    expect(a).toContain('gov.br');
    expect(nada).toContain('Nenhuma divergência: nada a fazer.');
    expect(nada).not.toContain('<table>');
    expect(b).not.toContain('aviso');
    expect(b).not.toContain('<table>');
  });

  it('escapes every value on the page: a <script> in a school, a code, a value is text', async () => {
    const cartas = new Cartas();
    const evil = '<script>alert("x")</script>';
    cartas.divergencia(d(`${evil}&`, `${evil}'`, '2', 'nome_mae', 'receita', evil, evil));
    const html = (await text(cartas, 'html')).toString('utf8');
    expect(html).not.toContain('<script');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;');
    expect(html).toContain('&lt;/script&gt;&#39;');
  });
});
