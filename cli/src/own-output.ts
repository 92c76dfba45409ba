// Whether a file in a batch's folder is an output of this project rather than a school's return:
// staff keep outputs beside the returns (`censo lote . -o divergencias.xlsx`, `censo divergencias
// escola-a/retorno.json -o escola-a/divergencias.json`, issue 50), and the next run must pass over
// them and say so, not count them as returns that failed. Every output the project writes is
// known by its start: `censo lote`'s and the service's batch exports, `censo divergencias`,
// `retorno-rf`, `comparar` and `resumo`, and the service's answers of the same. Only the file's
// first bytes are read (a JSON's opening, a CSV's header, an xlsx's workbook and first sheet),
// never the whole file.
import { open, type FileHandle } from 'node:fs/promises';
import { constants, inflateRawSync } from 'node:zlib';
import {
  CARTAS_ESCOLAS_WORDS,
  COMPARACAO_COLUMNS,
  csvLine,
  DIVERGENCIA_COLUMNS,
  DIVERGENCIAS_PLANILHA,
  escapedCellText,
  LOTE_COLUMNS,
  LOTE_XLSX_COLUMNS,
  PESSOA_COLUMNS,
  PESSOAS_PLANILHA,
  RESUMO_COLUMNS,
} from '@censo/shared/local';

/** Said of an earlier `censo lote` result found among the returns. */
export const LOTE_OUTPUT_NOTE = 'resultado anterior do censo lote';
/** Said of any other output of the project found among the returns. */
export const PROJECT_OUTPUT_NOTE = 'resultado do censo, não é um retorno';

/**
 * `{"divergencias":[` (a batch's, `censo divergencias`'), `{"pessoas":[`, `{"comparacao":[`,
 * `{"resumo":[` or `{"falhas":[`, then `]` or an item whose first key is one of the project's own.
 * A return's JSON has INEP's keys (`Registro`, `Código na Escola`…), never these.
 */
const FIRST_KEYS = ['arquivo', 'referencia', DIVERGENCIA_COLUMNS[0], PESSOA_COLUMNS[0], COMPARACAO_COLUMNS[0]];
const JSON_LOTE = /^\uFEFF?\s*\{\s*"divergencias"\s*:\s*\[\s*(\]|\{\s*"(arquivo|referencia)"\s*:)/;
const JSON_OUTPUT = new RegExp(
  `^\\uFEFF?\\s*\\{\\s*"(divergencias|pessoas|comparacao|resumo|falhas)"\\s*:\\s*\\[\\s*(\\]|\\{\\s*"(${[...new Set(FIRST_KEYS)].join('|')})"\\s*:)`,
);

/** The CSV headers the project writes (every CSV is the JSON's keys, SPEC §3.5). */
const CSV_HEADERS = [
  DIVERGENCIA_COLUMNS,
  PESSOA_COLUMNS,
  COMPARACAO_COLUMNS,
  RESUMO_COLUMNS,
  ['referencia', 'arquivo', ...DIVERGENCIA_COLUMNS],
  ['referencia', 'arquivo', 'status', 'erro'],
].map((columns) => csvLine(columns));

/** Header cells a workbook of the project has and no return does, by the name of its first sheet. */
const WORKBOOK_HEADERS: ReadonlyArray<{ readonly sheet: string; readonly cells: readonly string[]; readonly lote: boolean }> = [
  // `censo lote`'s, in words (SPEC §3.5), or as named before they were put in words.
  { sheet: 'divergencias', cells: [LOTE_XLSX_COLUMNS[0]!, LOTE_XLSX_COLUMNS[5]!], lote: true },
  { sheet: 'divergencias', cells: [LOTE_COLUMNS[1]!], lote: true },
  // `censo divergencias` and the service's answers and batch exports.
  { sheet: 'divergencias', cells: [DIVERGENCIAS_PLANILHA.columns[1]!, DIVERGENCIAS_PLANILHA.columns[4]!], lote: false },
  { sheet: 'pessoas', cells: [PESSOAS_PLANILHA.columns[1]!, PESSOAS_PLANILHA.columns[6]!], lote: false },
  { sheet: 'comparacao', cells: ['Situação', 'Valor enviado (rodada anterior)'], lote: false },
  { sheet: 'resumo', cells: ['Referência', 'Arquivos', 'Falhas', 'Divergências'], lote: false },
  // `censo cartas` and the service's letters (issue 56).
  { sheet: 'escolas', cells: [CARTAS_ESCOLAS_WORDS[0]!, CARTAS_ESCOLAS_WORDS[CARTAS_ESCOLAS_WORDS.length - 1]!], lote: false },
  { sheet: 'Falhas', cells: ['Referência', 'Arquivo'], lote: false },
  { sheet: 'falhas', cells: ['Referência', 'Arquivo'], lote: false },
].map(({ sheet, cells, lote }) => ({ sheet, cells: cells.map((cell) => `>${escapedCellText(cell)}<`), lote }));

async function head(handle: FileHandle, bytes: number, position = 0): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  const { bytesRead } = await handle.read(buffer, 0, bytes, position);
  return buffer.subarray(0, bytesRead);
}

/** The start (at most `limit` bytes) of each named zip entry found in the central directory. */
async function zipEntries(handle: FileHandle, names: readonly string[], limit: number): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const size = (await handle.stat()).size;
  // The end-of-central-directory record: 22 bytes and a comment of up to 65535.
  const tailStart = Math.max(0, size - 22 - 0xffff);
  const tail = await head(handle, size - tailStart, tailStart);
  const end = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0 || end + 22 > tail.length) return found;
  const directorySize = tail.readUInt32LE(end + 12);
  const directoryOffset = tail.readUInt32LE(end + 16);
  // A zip64 archive (or a directory too large to be a workbook's) is not what this looks for.
  if (directoryOffset === 0xffffffff || directorySize > 1024 * 1024) return found;
  const directory = await head(handle, directorySize, directoryOffset);
  for (let at = 0; at + 46 <= directory.length && directory.readUInt32LE(at) === 0x02014b50;) {
    const method = directory.readUInt16LE(at + 10);
    const compressed = directory.readUInt32LE(at + 20);
    const nameLength = directory.readUInt16LE(at + 28);
    const extraLength = directory.readUInt16LE(at + 30);
    const commentLength = directory.readUInt16LE(at + 32);
    const local = directory.readUInt32LE(at + 42);
    const name = directory.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + nameLength + extraLength + commentLength;
    if (!names.includes(name) || (method !== 0 && method !== 8)) continue;
    const localHeader = await head(handle, 30, local);
    if (localHeader.length < 30 || localHeader.readUInt32LE(0) !== 0x04034b50) continue;
    const dataStart = local + 30 + localHeader.readUInt16LE(26) + localHeader.readUInt16LE(28);
    const data = await head(handle, Math.min(compressed, limit), dataStart);
    try {
      // A prefix of a deflated stream: a sync flush gives what it holds instead of failing at its cut end.
      const text = method === 0 ? data : inflateRawSync(data, { finishFlush: constants.Z_SYNC_FLUSH });
      found.set(name, text.toString('utf8', 0, Math.min(text.length, limit)));
    } catch {
      // Not inflatable: not ours.
    }
  }
  return found;
}

/** The note for a workbook of the project, or null. */
async function xlsxOutput(handle: FileHandle): Promise<string | null> {
  // Its first sheet's name is one of the project's, and its header is one of the project's,
  // inline (as written) or in the shared strings (after a spreadsheet program saved it again).
  // The small workbook part first: a school's return stops there, without inflating the start of
  // its sheet and strings (1.1 ms a file, a fifth of `lote --servidor`'s own CPU on a state's burst).
  const workbook = await zipEntries(handle, ['xl/workbook.xml'], 64 * 1024);
  const firstSheet = /<(?:\w+:)?sheet\b[^>]*\bname="([^"]*)"/.exec(workbook.get('xl/workbook.xml') ?? '')?.[1];
  const candidates = WORKBOOK_HEADERS.filter((header) => header.sheet === firstSheet);
  if (candidates.length === 0) return null;
  const parts = await zipEntries(handle, ['xl/worksheets/sheet1.xml', 'xl/sharedStrings.xml'], 64 * 1024);
  const cells = (parts.get('xl/worksheets/sheet1.xml') ?? '') + (parts.get('xl/sharedStrings.xml') ?? '');
  const found = candidates.find((header) => header.cells.every((cell) => cells.includes(cell)));
  return found === undefined ? null : found.lote ? LOTE_OUTPUT_NOTE : PROJECT_OUTPUT_NOTE;
}

/**
 * The note to show when `file` is an output of the project (by its content; its name says
 * nothing): `LOTE_OUTPUT_NOTE` for a batch's, `PROJECT_OUTPUT_NOTE` for any other. Null for
 * anything else, an unreadable file included.
 */
export async function projectOutputNote(file: string): Promise<string | null> {
  const handle = await open(file, 'r').catch(() => null);
  if (handle === null) return null;
  try {
    const start = await head(handle, 4096);
    if (start[0] === 0x50 && start[1] === 0x4b) return await xlsxOutput(handle);
    const text = start.toString('utf8').replace(/^\uFEFF/, '');
    if (JSON_LOTE.test(text) || text.startsWith(csvLine(LOTE_COLUMNS))) return LOTE_OUTPUT_NOTE;
    if (JSON_OUTPUT.test(text) || CSV_HEADERS.some((header) => text.startsWith(header))) return PROJECT_OUTPUT_NOTE;
    return null;
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}

/** True when `file` is an output of the project (see projectOutputNote). */
export async function isProjectOutput(file: string): Promise<boolean> {
  return (await projectOutputNote(file)) !== null;
}
