// Workbooks as exceljs writes them, both APIs: the document model (`xlsx.writeFile`) and the
// streaming WorkbookWriter with and without shared strings.
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { HEADER, readRows, tempPath } from '../helpers/xlsx-builders.js';

const RF = 'O campo não está de acordo com a base da Receita Federal.';
const DATA: (string | number | Date)[][] = [
  [30, 15, 'ALU0001', 'Número do CPF', RF, '52998224725 -- 52998224726'],
  [30, 16, 12345, 'Data de nascimento', RF, new Date(Date.UTC(2014, 2, 15))],
  [60, 17, 'ALU0003', 'Turma', 'Outra mensagem', ''],
];
const EXPECTED = [
  { registro: '30', linha: '15', codigo: 'ALU0001', campo: 'Número do CPF', mensagem: RF, conteudo: '52998224725 -- 52998224726' },
  { registro: '30', linha: '16', codigo: '12345', campo: 'Data de nascimento', mensagem: RF, conteudo: '15/03/2014' },
  { registro: '60', linha: '17', codigo: 'ALU0003', campo: 'Turma', mensagem: 'Outra mensagem', conteudo: '' },
];

describe('xlsx written by exceljs', () => {
  it('document model: title row, rich text, formula, several sheets', async () => {
    const wb = new ExcelJS.Workbook();
    const cover = wb.addWorksheet('Capa');
    cover.addRow(['Relatório']);
    const ws = wb.addWorksheet('Erros');
    ws.addRow(['Relatório de erros - Censo Escolar']);
    ws.addRow([...HEADER]);
    for (const r of DATA) ws.addRow(r);
    ws.getCell('F5').numFmt = 'dd/mm/yyyy';
    ws.getCell('E3').value = {
      richText: [{ text: 'O campo não está de acordo ', font: { bold: true } }, { text: 'com a base da Receita Federal.' }],
    };
    ws.getCell('B3').value = { formula: '10+5', result: 15 };
    const path = await tempPath('xlsx');
    await wb.xlsx.writeFile(path);
    expect(await readRows(path, 'xlsx')).toEqual(EXPECTED);
  });

  for (const useSharedStrings of [true, false]) {
    it(`streaming WorkbookWriter, useSharedStrings ${useSharedStrings}`, async () => {
      const path = await tempPath('xlsx');
      const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useSharedStrings, useStyles: true });
      const ws = wb.addWorksheet('Erros');
      ws.addRow(['Relatório de erros']).commit();
      ws.addRow([...HEADER]).commit();
      for (const r of DATA) {
        const added = ws.addRow(r);
        if (r[5] instanceof Date) added.getCell(6).numFmt = 'dd/mm/yyyy';
        added.commit();
      }
      ws.commit();
      await wb.commit();
      expect(await readRows(path, 'xlsx')).toEqual(EXPECTED);
    });
  }
});
