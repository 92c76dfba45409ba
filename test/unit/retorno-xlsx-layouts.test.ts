// The xlsx reader against the layouts real writers produce (SPEC §1.2).
import { describe, expect, it } from 'vitest';
import {
  buildXlsx,
  HEADER,
  is,
  num,
  readError,
  readRows,
  row,
  stylesXml,
  textRow,
  zipParts,
  workbookParts,
} from '../helpers/xlsx-builders.js';

const RF = 'Diverge da base da Receita Federal.';

describe('xlsx header and sheets', () => {
  it('finds the header below title and blank rows, with synonyms and a different column order', async () => {
    const path = await buildXlsx({
      sheets: [
        {
          rows:
            textRow(1, ['Relatório de erros - Censo Escolar 2025']) +
            row(2) +
            textRow(4, ['Descrição', 'NOME DO CAMPO', '  Código   da Pessoa  ', 'Valor do campo', 'N da Linha', 'Tipo de Registro']) +
            textRow(5, [RF, 'Número do CPF', 'ALU1', '1 -- 2', '7', '30']),
        },
      ],
    });
    expect(await readRows(path, 'xlsx')).toEqual([
      { registro: '30', linha: '7', codigo: 'ALU1', campo: 'Número do CPF', mensagem: RF, conteudo: '1 -- 2' },
    ]);
  });

  it('reads every sheet in workbook order, skipping one without a header', async () => {
    const path = await buildXlsx({
      sheets: [
        { name: 'Capa', rows: textRow(1, ['Escola X']) + textRow(2, ['Total', '3']) },
        { name: 'Erros A', rows: textRow(1, [...HEADER]) + textRow(2, ['30', '2', 'A1', 'Nome', RF, 'X -- Y']) },
        {
          name: 'Erros B',
          rows:
            textRow(3, ['Mensagem de erro', 'Campo', 'Código na escola']) + textRow(4, [RF, 'CPF', 'B1']) + textRow(5, [RF, 'Nome', 'B2']),
        },
      ],
    });
    const rows = await readRows(path, 'xlsx');
    expect(rows.map((r) => r.codigo)).toEqual(['A1', 'B1', 'B2']);
    // Sheet B has no Registro/Linha/Conteúdo columns.
    expect(rows[1]).toEqual({ registro: null, linha: null, codigo: 'B1', campo: 'CPF', mensagem: RF, conteudo: '' });
  });

  it('ignores a header-like row below row 20 (the sheet is skipped, so the file is unreadable)', async () => {
    const path = await buildXlsx({
      sheets: [{ rows: textRow(1, ['Título']) + textRow(21, [...HEADER]) + textRow(22, ['30', '1', 'A', 'B', 'C', 'D']) }],
    });
    const err = await readError(path, 'xlsx');
    // The best candidate is the title row (the header-like row 21 is beyond the 20 looked at).
    expect(err.message).toBe(
      'Arquivo retorno ilegível: cabeçalho não reconhecido na planilha "Plan1" (encontradas: Título; faltam: código, campo, mensagem).',
    );
  });

  it('accepts the header on row 20 and a sheet with a header and no data', async () => {
    const a = await buildXlsx({ sheets: [{ rows: textRow(20, [...HEADER]) + textRow(21, ['30', '1', 'A', 'B', 'C', 'D']) }] });
    expect((await readRows(a, 'xlsx')).map((r) => r.codigo)).toEqual(['A']);
    const b = await buildXlsx({ sheets: [{ rows: textRow(1, [...HEADER]) }] });
    expect(await readRows(b, 'xlsx')).toEqual([]);
  });

  it('skips data rows whose mapped cells are all empty, and keeps only mapped columns', async () => {
    const path = await buildXlsx({
      sheets: [
        {
          rows:
            textRow(1, [...HEADER, 'Observação']) +
            textRow(2, ['', '', '', '', '', '', 'só observação']) +
            row(3, is('C3', '   ')) +
            textRow(4, ['30', '9', 'Z', 'Campo', RF, 'a -- b', 'ignorada']),
        },
      ],
    });
    expect(await readRows(path, 'xlsx')).toEqual([
      { registro: '30', linha: '9', codigo: 'Z', campo: 'Campo', mensagem: RF, conteudo: 'a -- b' },
    ]);
  });

  it('a workbook with rows but no usable header is unreadable; an empty one yields no rows', async () => {
    const bad = await buildXlsx({ sheets: [{ rows: textRow(1, ['Código', 'Campo', 'Mensagem']) }] });
    expect((await readError(bad, 'xlsx')).message).toBe(
      'Arquivo retorno ilegível: cabeçalho não reconhecido na planilha "Plan1" (encontradas: Código, Campo, Mensagem; faltam: código).',
    );
    const empty = await buildXlsx({ sheets: [{ rows: '' }] });
    expect(await readRows(empty, 'xlsx')).toEqual([]);
  });
});

describe('xlsx cell values', () => {
  const header = textRow(1, [...HEADER]);

  it('writes numbers without a trailing .0, in shortest form', async () => {
    const path = await buildXlsx({
      sheets: [
        {
          rows:
            header +
            row(2, num('A2', '30.0'), num('B2', '15'), num('C2', '1.2345678901234E+17'), is('D2', 'x'), is('E2', 'y'), num('F2', '0.1')) +
            row(3, num('A3', '-0'), num('B3', '2.50'), num('C3', '00123'), is('D3', 'x'), is('E3', 'y'), num('F3', '1E-3')),
        },
      ],
    });
    const rows = await readRows(path, 'xlsx');
    expect(rows.map((r) => [r.registro, r.linha, r.codigo, r.conteudo])).toEqual([
      ['30', '15', '123456789012340000', '0.1'],
      ['0', '2.5', '123', '0.001'],
    ]);
  });

  it('writes date-formatted numbers as DD/MM/YYYY (1900 system, serial 60 and below, time ignored)', async () => {
    const styles = stylesXml([0, 14, 164, 165, 22], { 164: 'dd/mm/yyyy;@', 165: '0.00" dias"' });
    const path = await buildXlsx({
      styles,
      sheets: [
        {
          rows:
            header +
            row(2, num('A2', 45000, 1), num('B2', 60, 1), num('C2', 59, 2), num('D2', '61.75', 4), num('E2', 1, 1), num('F2', 45000, 3)) +
            row(3, num('A3', 45000, 0), num('B3', 0, 1), num('C3', '10.5', 2), num('D3', 'x', 1), num('E3', 2958465, 1), num('F3', -1, 1)),
        },
      ],
    });
    const rows = await readRows(path, 'xlsx');
    expect(rows[0]).toEqual({
      registro: '15/03/2023',
      linha: '29/02/1900',
      codigo: '28/02/1900',
      campo: '01/03/1900',
      mensagem: '01/01/1900',
      conteudo: '45000', // a quoted literal is not a date format
    });
    expect(rows[1]).toEqual({
      registro: '45000',
      linha: '00/01/1900',
      codigo: '10/01/1900',
      campo: 'x',
      mensagem: '31/12/9999',
      conteudo: '-1',
    });
  });

  it('uses the 1904 date system when the workbook says so', async () => {
    const path = await buildXlsx({
      date1904: true,
      styles: stylesXml([0, 14]),
      sheets: [{ rows: header + row(2, num('A2', 0, 1), num('B2', 43538, 1), is('C2', 'c'), is('D2', 'd'), is('E2', 'e')) }],
    });
    const [r] = await readRows(path, 'xlsx');
    expect([r?.registro, r?.linha]).toEqual(['01/01/1904', '15/03/2023']);
  });

  it('reads shared strings (rich text runs joined, phonetic runs ignored), entities and escapes', async () => {
    const sst =
      '<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">' +
      '<si><t>Registro</t></si><si><t>Linha</t></si><si><t>Código na Escola</t></si><si><t>Campo</t></si><si><t>Mensagem</t></si><si><t>Conteúdo</t></si>' +
      '<si><r><rPr><b/></rPr><t>Receita </t></r><r><t xml:space="preserve">Federal &amp; RFB</t></r><rPh sb="0" eb="1"><t>ふりがな</t></rPh></si>' +
      '<si><t>&#65;&#x42;C &lt;x&gt; &quot;q&quot; &apos;a&apos; linha1&#10;linha2</t></si>' +
      '<si><t>CR_x000D_here</t></si><si/></sst>';
    const path = await buildXlsx({
      sharedStrings: sst,
      sheets: [
        {
          rows:
            row(1, ...[0, 1, 2, 3, 4, 5].map((i) => `<c r="${String.fromCharCode(65 + i)}1" t="s"><v>${i}</v></c>`)) +
            row(
              2,
              '<c r="A2" t="s"><v>9</v></c>',
              '<c r="B2" t="s"><v>8</v></c>',
              '<c r="C2" t="s"><v>7</v></c>',
              is('D2', 'd'),
              '<c r="E2" t="s"><v>6</v></c>',
            ),
        },
      ],
    });
    expect(await readRows(path, 'xlsx')).toEqual([
      {
        registro: '',
        linha: 'CR\rhere',
        codigo: 'ABC <x> "q" \'a\' linha1\nlinha2',
        campo: 'd',
        mensagem: 'Receita Federal & RFB',
        conteudo: '',
      },
    ]);
  });

  it('takes formulas by their cached result, and reads str, b, e and d cells', async () => {
    const path = await buildXlsx({
      sheets: [
        {
          rows:
            textRow(1, [...HEADER]) +
            row(
              2,
              '<c r="A2"><f>10*3</f><v>30</v></c>',
              '<c r="B2" t="str"><f>"1"&amp;"5"</f><v>15</v></c>',
              '<c r="C2" t="b"><v>1</v></c>',
              '<c r="D2" t="e"><f>1/0</f><v>#DIV/0!</v></c>',
              '<c r="E2" t="d"><v>2023-03-15T10:20:00</v></c>',
              '<c r="F2" t="b"><v>0</v></c>',
            ),
        },
      ],
    });
    expect(await readRows(path, 'xlsx')).toEqual([
      { registro: '30', linha: '15', codigo: 'TRUE', campo: '#DIV/0!', mensagem: '15/03/2023', conteudo: 'FALSE' },
    ]);
  });
});

describe('xlsx writer quirks', () => {
  it('reads namespace-prefixed elements, cells and rows without r, and no styles/sharedStrings parts', async () => {
    const cell = (v: string) => `<x:c t="inlineStr"><x:is><x:t>${v}</x:t></x:is></x:c>`;
    const rows =
      `<x:row>${cell('Título')}</x:row>` +
      `<x:row>${['Registro', 'Linha', 'Código na Escola', 'Campo', 'Mensagem'].map(cell).join('')}</x:row>` +
      `<x:row><x:c><x:v>30</x:v></x:c><x:c><x:v>4</x:v></x:c>${cell('P1')}${cell('CPF')}${cell(RF)}</x:row>` +
      // Mixed: an explicit reference skips column B, then sequential again.
      `<x:row r="7"><x:c r="A7"><x:v>60</x:v></x:c><x:c r="C7" t="inlineStr"><x:is><x:t>P2</x:t></x:is></x:c>${cell('Nome')}${cell(RF)}</x:row>`;
    const path = await buildXlsx({ prefix: 'x', sheets: [{ rows }] });
    expect(await readRows(path, 'xlsx')).toEqual([
      { registro: '30', linha: '4', codigo: 'P1', campo: 'CPF', mensagem: RF, conteudo: '' },
      { registro: '60', linha: '', codigo: 'P2', campo: 'Nome', mensagem: RF, conteudo: '' },
    ]);
  });

  it('resolves absolute relationship targets and reads stored (uncompressed) parts', async () => {
    const parts = workbookParts({
      sheets: [{ target: '/xl/worksheets/dados.xml', rows: textRow(1, [...HEADER]) + textRow(2, ['30', '1', 'A', 'B', 'C', 'D']) }],
    });
    const path = await zipParts(parts, { compress: false });
    expect((await readRows(path, 'xlsx')).map((r) => r.codigo)).toEqual(['A']);
  });

  it('keeps only mapped values from rows with thousands of columns and huge unmapped cells', async () => {
    const wide = Array.from({ length: 5000 }, (_, i) => `<c><v>${i}</v></c>`).join('');
    const huge = `<c r="G2" t="inlineStr"><is><t>${'x'.repeat(5_000_000)}</t></is></c>`;
    const path = await buildXlsx({
      sheets: [
        {
          rows:
            textRow(1, [...HEADER]) +
            row(2, is('A2', '30'), is('B2', '1'), is('C2', 'A'), is('D2', 'B'), is('E2', 'C'), is('F2', 'D'), huge, wide),
        },
      ],
    });
    expect(await readRows(path, 'xlsx')).toEqual([{ registro: '30', linha: '1', codigo: 'A', campo: 'B', mensagem: 'C', conteudo: 'D' }]);
  });

  it('splits tags, entities and multi-byte characters across chunk boundaries correctly', async () => {
    // ~3 MB of rows so the inflate stream delivers many chunks, cutting through everything.
    const rows = [textRow(1, [...HEADER])];
    for (let r = 2; r < 12_000; r++)
      rows.push(textRow(r, ['30', String(r), `Ç${r}&ã`, 'Número do CPF', 'Mensagem é ção 😀', `${r} -- ${r + 1}`]));
    const path = await buildXlsx({ sheets: [{ rows: rows.join('') }] });
    const read = await readRows(path, 'xlsx');
    expect(read).toHaveLength(11_998);
    read.forEach((r, i) => {
      expect(r.codigo).toBe(`Ç${i + 2}&ã`);
      expect(r.mensagem).toBe('Mensagem é ção 😀');
    });
  });
});
