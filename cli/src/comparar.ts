// `censo comparar <antes> <depois> -o <saida>` (SPEC §10): two rounds compared offline, from the
// combined results of `censo lote` (json, csv or xlsx, mixed; with or without --servidor), with the
// core's judgment and writer, so the answer is the service's GET /api/lotes/{id}/comparacao for the
// same rounds; and `censo resumo <resultado>`, a result's counts per school and kind as the
// service's GET /api/lotes/{id}/resumo. A school is its `referencia` column when the result has one
// (the service's batch export), else its file's path in the folder (`arquivo`); the core pairs a
// school whose file was renamed by its folder (SPEC §10, issue 50). The schools of a round are the
// files its result lists (`arquivos` of the JSON, the `arquivos` sheet), read or failed, so a school
// with no divergence left is still in its round; a CSV lists none, and that is said on stderr.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  CHAVES_RESUMO,
  CORRECAO_PALAVRAS,
  CORRECOES,
  compararRodadas,
  comparacaoChunks,
  DADOS,
  Resumo,
  resumoChunks,
  type Chave,
  type Correcao,
  type Comparacao,
  type DivergenciaRodada,
  type FalhaRodada,
  type ProgressoFormat,
  type Rodada,
} from '@censo/shared/local';
import { BadUsage, errnoCode, InputError, quote } from './failures.js';
import { ARQUIVOS_XLSX_COLUMNS } from './lote.js';
import { openOutput } from './output.js';

/** The words a workbook writes for `chave` (SPEC §3.5, session 4), back to the field names. */
const CHAVE_OF_WORD = new Map<string, Chave | null>(
  Object.entries(DADOS).map(([chave, word]) => [word, chave === 'outro' ? null : (chave as Chave)]),
);

/** The words a workbook writes for `correcao` (SPEC §11), back to the codes. */
const CORRECAO_OF_WORD = new Map<string, Correcao>(
  Object.entries(CORRECAO_PALAVRAS).map(([correcao, word]) => [word, correcao as Correcao]),
);

/** The workbook's headers (in words) and the CSV's and JSON's (field names), for the columns compared. */
const HEADERS: Readonly<Record<keyof DivergenciaLinha | 'arquivo', readonly string[]>> = {
  referencia: ['referencia', 'Referência'],
  arquivo: ['arquivo', 'Arquivo'],
  codigo_na_escola: ['codigo_na_escola', 'Código na escola'],
  linha: ['linha', 'Linha no txt'],
  campo: ['campo', 'Campo no retorno'],
  enviado: ['enviado', 'Valor enviado'],
  correto: ['correto', 'Valor da Receita Federal'],
  chave: ['chave', 'Dado'],
  correcao: ['correcao', 'Como corrigir'],
};

/** A workbook sheet of divergences: its header names the person's code and the field (in words). */
const isDivergenciasHeader = (header: readonly string[]): boolean =>
  HEADERS.codigo_na_escola.some((name) => header.includes(name)) && HEADERS.chave.some((name) => header.includes(name));

/** The CSV writer's formula guard (SPEC §3.5), undone: `'=x` was `=x`. */
const unguard = (value: string): string => (/^'[=+\-@\t\r]/.test(value) ? value.slice(1) : value);

function notACombinedResult(file: string, why: string): InputError {
  return new InputError(`${quote(file)} não é um resultado do censo lote (${why}).`);
}

/** A `correcao` cell (its code, or its words in a workbook) back to the code; null when absent or unknown. */
function correcaoOf(cell: string, words: boolean): Correcao | null {
  if (words) return CORRECAO_OF_WORD.get(cell) ?? null;
  return (CORRECOES as readonly string[]).includes(cell) ? (cell as Correcao) : null;
}

/** A row of a CSV or workbook as a divergence, by its header. */
function rowReader(file: string, header: readonly string[], words: boolean): (cells: readonly string[]) => DivergenciaLinha {
  const at = (field: keyof typeof HEADERS) => header.findIndex((name) => HEADERS[field].includes(name));
  const index = {
    referencia: at('referencia'),
    arquivo: at('arquivo'),
    codigo_na_escola: at('codigo_na_escola'),
    linha: at('linha'),
    campo: at('campo'),
    enviado: at('enviado'),
    correto: at('correto'),
    chave: at('chave'),
    correcao: at('correcao'),
  };
  const missing = Object.entries(index)
    // A result written before `correcao` (SPEC §11) lacks it: its divergences count in no way of fixing.
    .filter(
      ([field, i]) =>
        i < 0 && field !== 'referencia' && field !== 'correcao' && field !== 'linha' && !(field === 'arquivo' && index.referencia >= 0),
    )
    .map(([field]) => field);
  if (missing.length > 0) throw notACombinedResult(file, `faltam as colunas ${missing.join(', ')}`);
  const cell = (cells: readonly string[], i: number) => (i < 0 ? '' : (cells[i] ?? ''));
  return (cells) => {
    const chaveText = cell(cells, index.chave);
    return {
      referencia: cell(cells, index.referencia >= 0 ? index.referencia : index.arquivo),
      codigo_na_escola: cell(cells, index.codigo_na_escola),
      linha: cell(cells, index.linha),
      campo: cell(cells, index.campo),
      enviado: cell(cells, index.enviado),
      correto: cell(cells, index.correto),
      chave: words ? (CHAVE_OF_WORD.get(chaveText) ?? null) : chaveText === '' ? null : (chaveText as Chave),
      correcao: correcaoOf(cell(cells, index.correcao), words),
    };
  };
}

/** A divergence as a combined result states it: what a round compares, and the person's line (`censo cartas`). */
export type DivergenciaLinha = DivergenciaRodada & { readonly linha: string };

/** What a combined result holds: its divergences, the files it read (null when it does not list them) and those that failed. */
export interface Resultado {
  readonly divergencias: DivergenciaLinha[];
  readonly lidos: string[] | null;
  readonly falhas: FalhaRodada[];
  /** Every file the result lists, read or failed, in its order (empty when it lists none). */
  readonly ordem?: string[];
}

const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));

/** The `arquivos` list of `censo lote` (issue 50), or the service export's `falhas`, as read and failed files. */
function filesOf(parsed: { arquivos?: unknown; falhas?: unknown }): Pick<Resultado, 'lidos' | 'falhas' | 'ordem'> {
  const falhas: FalhaRodada[] = [];
  if (Array.isArray(parsed.arquivos)) {
    const lidos: string[] = [];
    const ordem: string[] = [];
    for (const raw of parsed.arquivos as Array<Record<string, unknown>>) {
      const referencia = text(raw?.referencia ?? raw?.arquivo);
      ordem.push(referencia);
      if (raw?.erro === null || raw?.erro === undefined) lidos.push(referencia);
      else falhas.push({ referencia, erro: text(raw.erro) });
    }
    return { lidos, falhas, ordem };
  }
  if (Array.isArray(parsed.falhas)) {
    for (const raw of parsed.falhas as Array<Record<string, unknown>>)
      falhas.push({ referencia: text(raw?.referencia), erro: text(raw?.erro) });
  }
  return { lidos: null, falhas };
}

async function readJson(file: string): Promise<Resultado> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    if (errnoCode(err)) throw err;
    throw notACombinedResult(file, 'não é um JSON válido');
  }
  const items = (parsed as { divergencias?: unknown } | null)?.divergencias;
  if (!Array.isArray(items)) throw notACombinedResult(file, 'falta a lista "divergencias"');
  const divergencias = items.map((raw) => {
    const item = raw as Record<string, unknown>;
    return {
      referencia: text(item.referencia ?? item.arquivo),
      codigo_na_escola: text(item.codigo_na_escola),
      linha: text(item.linha),
      campo: text(item.campo),
      enviado: text(item.enviado),
      correto: text(item.correto),
      chave: (item.chave ?? null) as Chave | null,
      correcao: correcaoOf(text(item.correcao), false),
    };
  });
  return { divergencias, ...filesOf(parsed as { arquivos?: unknown; falhas?: unknown }) };
}

async function readCsv(file: string): Promise<Resultado> {
  const { parse } = await import('csv-parse');
  const rows: DivergenciaLinha[] = [];
  let read: ((cells: readonly string[]) => DivergenciaLinha) | null = null;
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
  // The CSV's shape is fixed (SPEC §7.3): it lists no file, only divergences.
  return { divergencias: rows, lidos: null, falhas: [] };
}

/** The `arquivos` sheet (`Arquivo`, `Divergências`, `Falha`) or the service's `Falhas` sheet, by its header. */
const isArquivosHeader = (header: readonly string[]): boolean => ARQUIVOS_XLSX_COLUMNS.every((name, i) => header[i] === name);
const isFalhasHeader = (header: readonly string[]): boolean =>
  header[0] === 'Referência' && header[1] === 'Arquivo' && header.includes('Erro');

async function readXlsx(file: string): Promise<Resultado> {
  const { default: ExcelJS } = await import('exceljs');
  const rows: DivergenciaLinha[] = [];
  let lidos: string[] | null = null;
  const falhas: FalhaRodada[] = [];
  const ordem: string[] = [];
  try {
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(createReadStream(file), { sharedStrings: 'cache', worksheets: 'emit' });
    let sheets = 0;
    for await (const sheet of reader) {
      // The sheets are told by their header, not their name: the writer puts workbook.xml, where
      // the names are, after the sheets, and a streaming reader may meet a sheet before its name.
      let read: ((cells: readonly string[]) => void) | null | undefined;
      for await (const row of sheet) {
        const values = (row.values as unknown[]).slice(1).map(text);
        if (read === undefined) {
          if (isDivergenciasHeader(values)) {
            const divergencia = rowReader(file, values, true);
            read = (cells) => rows.push(divergencia(cells));
            sheets++;
          } else if (isArquivosHeader(values)) {
            const list = (lidos ??= []);
            read = ([arquivo = '', , erro = '']) => {
              ordem.push(arquivo);
              if (erro === '') list.push(arquivo);
              else falhas.push({ referencia: arquivo, erro });
            };
          } else if (isFalhasHeader(values)) {
            const erroAt = values.indexOf('Erro');
            read = (cells) => falhas.push({ referencia: cells[0] ?? '', erro: cells[erroAt] ?? '' });
          } else read = null;
        } else if (read !== null) read(values);
      }
    }
    if (sheets === 0) throw notACombinedResult(file, 'nenhuma planilha de divergências');
  } catch (err) {
    if (errnoCode(err) || err instanceof InputError) throw err;
    throw notACombinedResult(file, 'não é uma planilha .xlsx válida');
  }
  return { divergencias: rows, lidos, falhas, ordem };
}

/** A combined result of `censo lote` (or a batch's export), by its extension. */
export async function readResultado(file: string): Promise<Resultado> {
  const extension = path.extname(file).slice(1).toLowerCase();
  const read = extension === 'json' ? readJson : extension === 'csv' ? readCsv : extension === 'xlsx' ? readXlsx : null;
  if (read === null) throw new InputError(`${quote(file)}: use um resultado do censo lote em .json, .csv ou .xlsx.`);
  const resultado = await read(file);
  if (resultado.lidos === null) {
    // Without the list, a school is in the round when the result holds a row of it: one whose
    // file had no divergence left, or failed, is not (issue 50). Said, not silently miscounted.
    process.stderr.write(
      `censo: ${quote(file)} não lista os arquivos lidos (só o .json e o .xlsx do censo lote listam): ` +
        'uma escola sem divergências nele conta como ausente.\n',
    );
  }
  return resultado;
}

/** `--dado cpf,nome`: the words of `chave` (and `outro`), checked; undefined when not given. */
export function dadosOf(value: string | undefined): readonly string[] | undefined {
  if (value === undefined) return undefined;
  const dados = value
    .split(',')
    .map((dado) => dado.trim())
    .filter((dado) => dado !== '');
  const wrong = dados.filter((dado) => !(CHAVES_RESUMO as readonly string[]).includes(dado));
  if (dados.length === 0 || wrong.length > 0) {
    throw new BadUsage(`--dado ${quote(value)}: use um ou mais destes, separados por vírgula: ${CHAVES_RESUMO.join(', ')}.`);
  }
  return dados;
}

const ofDados = (d: DivergenciaRodada, dados: readonly string[] | undefined) => dados === undefined || dados.includes(d.chave ?? 'outro');

function rodadaOf(resultado: Resultado, dados: readonly string[] | undefined): Rodada {
  const divergencias = resultado.divergencias.filter((d) => ofDados(d, dados));
  return {
    referencias: resultado.lidos ?? resultado.divergencias.map((d) => d.referencia),
    falhas: resultado.falhas,
    divergencias,
  };
}

export interface CompararOptions {
  readonly antes: string;
  readonly depois: string;
  readonly format: ProgressoFormat;
  readonly output: string | undefined;
  /** Only divergences of these kinds (`--dado`); absent: all. */
  readonly dados?: readonly string[];
}

/** Writes the comparison; returns it (for the summary on stderr). */
export async function comparar(options: CompararOptions): Promise<Comparacao> {
  const [antes, depois] = [await readResultado(options.antes), await readResultado(options.depois)];
  const comparacao = await compararRodadas(rodadaOf(antes, options.dados), rodadaOf(depois, options.dados));
  await writeChunks(options.output, comparacaoChunks(comparacao, options.format));
  return comparacao;
}

export interface ResumoOptions {
  readonly resultado: string;
  readonly format: ProgressoFormat;
  readonly output: string | undefined;
}

/** `censo resumo`: the result's counts per school and kind, as the service's `/resumo` (SPEC §10). */
export async function resumir(options: ResumoOptions): Promise<Resumo> {
  const resultado = await readResultado(options.resultado);
  const resumo = new Resumo();
  // The files in the list's order (the result's), then any school only the rows name.
  const failed = new Set(resultado.falhas.map((falha) => falha.referencia));
  if (resultado.lidos !== null) {
    const lidos = new Set(resultado.lidos);
    for (const referencia of new Set(resultado.ordem ?? [...resultado.lidos, ...failed]))
      resumo.arquivo(referencia, !lidos.has(referencia));
  } else {
    const seen = new Set<string>();
    for (const d of resultado.divergencias) {
      if (seen.has(d.referencia)) continue;
      seen.add(d.referencia);
      resumo.arquivo(d.referencia, false);
    }
    for (const referencia of failed) resumo.arquivo(referencia, true);
  }
  for (const d of resultado.divergencias) resumo.divergencia(d.referencia, d.chave, d.correcao ?? null);
  await writeChunks(options.output, resumoChunks(resumo, options.format));
  return resumo;
}

export async function writeChunks(output: string | undefined, chunks: AsyncIterable<string | Buffer>): Promise<void> {
  const out = await openOutput(output);
  await out.write(Readable.from(chunks, { objectMode: false })).catch(async (err: unknown) => {
    throw await out.abandon(err);
  });
}
