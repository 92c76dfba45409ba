// `censo comparar <antes> <depois> -o <saida>` (SPEC §10): two rounds compared offline, from the
// combined results of `censo lote` (json, csv or xlsx, mixed; with or without --servidor), with the
// core's judgment and writer, so the answer is the service's GET /api/lotes/{id}/comparacao for the
// same rounds. A school is its `referencia` column when the result has one (the service's batch
// export), else its file's path in the folder (`arquivo`): rounds compare when each round's folder
// is laid out the same way (one subfolder, or one file name, per school).
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  compararRodadas,
  comparacaoChunks,
  DADOS,
  type Chave,
  type DivergenciaRodada,
  type ProgressoFormat,
  type Rodada,
} from '@censo/shared/local';
import { errnoCode, InputError, quote } from './failures.js';
import { openOutput } from './output.js';

/** The words a workbook writes for `chave` (SPEC §3.5, session 4), back to the field names. */
const CHAVE_OF_WORD = new Map<string, Chave | null>(
  Object.entries(DADOS).map(([chave, word]) => [word, chave === 'outro' ? null : (chave as Chave)]),
);

/** The workbook's headers (in words) and the CSV's and JSON's (field names), for the columns compared. */
const HEADERS: Readonly<Record<keyof DivergenciaRodada | 'arquivo', readonly string[]>> = {
  referencia: ['referencia', 'Referência'],
  arquivo: ['arquivo', 'Arquivo'],
  codigo_na_escola: ['codigo_na_escola', 'Código na escola'],
  campo: ['campo', 'Campo no retorno'],
  enviado: ['enviado', 'Valor enviado'],
  correto: ['correto', 'Valor da Receita Federal'],
  chave: ['chave', 'Dado'],
};

/** A workbook sheet of divergences: its header names the person's code and the field (in words). */
const isDivergenciasHeader = (header: readonly string[]): boolean =>
  HEADERS.codigo_na_escola.some((name) => header.includes(name)) && HEADERS.chave.some((name) => header.includes(name));

/** The CSV writer's formula guard (SPEC §3.5), undone: `'=x` was `=x`. */
const unguard = (value: string): string => (/^'[=+\-@\t\r]/.test(value) ? value.slice(1) : value);

function notACombinedResult(file: string, why: string): InputError {
  return new InputError(`${quote(file)} não é um resultado do censo lote (${why}).`);
}

/** A row of a CSV or workbook as a divergence, by its header. */
function rowReader(file: string, header: readonly string[], words: boolean): (cells: readonly string[]) => DivergenciaRodada {
  const at = (field: keyof typeof HEADERS) => header.findIndex((name) => HEADERS[field].includes(name));
  const index = {
    referencia: at('referencia'),
    arquivo: at('arquivo'),
    codigo_na_escola: at('codigo_na_escola'),
    campo: at('campo'),
    enviado: at('enviado'),
    correto: at('correto'),
    chave: at('chave'),
  };
  const missing = Object.entries(index)
    .filter(([field, i]) => i < 0 && field !== 'referencia' && !(field === 'arquivo' && index.referencia >= 0))
    .map(([field]) => field);
  if (missing.length > 0) throw notACombinedResult(file, `faltam as colunas ${missing.join(', ')}`);
  const cell = (cells: readonly string[], i: number) => (i < 0 ? '' : (cells[i] ?? ''));
  return (cells) => {
    const chaveText = cell(cells, index.chave);
    return {
      referencia: cell(cells, index.referencia >= 0 ? index.referencia : index.arquivo),
      codigo_na_escola: cell(cells, index.codigo_na_escola),
      campo: cell(cells, index.campo),
      enviado: cell(cells, index.enviado),
      correto: cell(cells, index.correto),
      chave: words ? (CHAVE_OF_WORD.get(chaveText) ?? null) : chaveText === '' ? null : (chaveText as Chave),
    };
  };
}

async function readJson(file: string): Promise<DivergenciaRodada[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    if (errnoCode(err)) throw err;
    throw notACombinedResult(file, 'não é um JSON válido');
  }
  const items = (parsed as { divergencias?: unknown } | null)?.divergencias;
  if (!Array.isArray(items)) throw notACombinedResult(file, 'falta a lista "divergencias"');
  return items.map((raw) => {
    const item = raw as Record<string, unknown>;
    const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
    return {
      referencia: text(item.referencia ?? item.arquivo),
      codigo_na_escola: text(item.codigo_na_escola),
      campo: text(item.campo),
      enviado: text(item.enviado),
      correto: text(item.correto),
      chave: (item.chave ?? null) as Chave | null,
    };
  });
}

async function readCsv(file: string): Promise<DivergenciaRodada[]> {
  const { parse } = await import('csv-parse');
  const rows: DivergenciaRodada[] = [];
  let read: ((cells: readonly string[]) => DivergenciaRodada) | null = null;
  const parser = createReadStream(file).pipe(parse({ bom: true, relax_column_count: true }));
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (read === null) read = rowReader(file, record, false);
      else rows.push(read(record.map(unguard)));
    }
  } catch (err) {
    if (errnoCode(err) || err instanceof InputError) throw err;
    throw notACombinedResult(file, 'CSV malformado');
  }
  if (read === null) throw notACombinedResult(file, 'arquivo vazio');
  return rows;
}

async function readXlsx(file: string): Promise<DivergenciaRodada[]> {
  const { default: ExcelJS } = await import('exceljs');
  const rows: DivergenciaRodada[] = [];
  try {
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(createReadStream(file), { sharedStrings: 'cache', worksheets: 'emit' });
    let sheets = 0;
    for await (const sheet of reader) {
      // The divergences' sheets (`divergencias`, `divergencias 2`...), told by their header, not
      // their name: the writer puts workbook.xml, where the names are, after the sheets, and a
      // streaming reader may meet a sheet before its name. A `Falhas` sheet has another header.
      let read: ((cells: readonly string[]) => DivergenciaRodada) | null | undefined;
      for await (const row of sheet) {
        const values = (row.values as unknown[]).slice(1).map((value) => (value === null || value === undefined ? '' : String(value)));
        if (read === undefined) {
          read = isDivergenciasHeader(values) ? rowReader(file, values, true) : null;
          if (read !== null) sheets++;
        } else if (read === null) continue;
        else rows.push(read(values));
      }
    }
    if (sheets === 0) throw notACombinedResult(file, 'nenhuma planilha de divergências');
  } catch (err) {
    if (errnoCode(err) || err instanceof InputError) throw err;
    throw notACombinedResult(file, 'não é uma planilha .xlsx válida');
  }
  return rows;
}

async function readRodada(file: string): Promise<Rodada> {
  const extension = path.extname(file).slice(1).toLowerCase();
  const read = extension === 'json' ? readJson : extension === 'csv' ? readCsv : extension === 'xlsx' ? readXlsx : null;
  if (read === null) throw new InputError(`${quote(file)}: use um resultado do censo lote em .json, .csv ou .xlsx.`);
  const divergencias = await read(file);
  // Offline, a school is in a round when the result holds a row of it: one whose file had no
  // divergence left, or failed, is not (the service's route knows its files; README says so).
  return { referencias: divergencias.map((d) => d.referencia), divergencias };
}

export interface CompararOptions {
  readonly antes: string;
  readonly depois: string;
  readonly format: ProgressoFormat;
  readonly output: string | undefined;
}

/** Writes the comparison; returns its total counts (for the summary on stderr). */
export async function comparar(options: CompararOptions) {
  const comparacao = await compararRodadas(await readRodada(options.antes), await readRodada(options.depois));
  const out = await openOutput(options.output);
  await out.write(Readable.from(comparacaoChunks(comparacao, options.format), { objectMode: false })).catch(async (err: unknown) => {
    throw await out.abandon(err);
  });
  return { total: comparacao.total, semPar: comparacao.referencias_sem_par.length };
}
