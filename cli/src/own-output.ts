// Whether a file in a batch's folder is an earlier result of `censo lote` (or of the service's
// batch download) rather than a school's return: staff keep the combined output beside the
// returns (`censo lote . -o divergencias.xlsx`), and the next run must pass over it and say so,
// not count it as a return that failed. Only the file's first bytes are read (a JSON's opening, a
// CSV's header, an xlsx's workbook and first sheet), never the whole file.
import { open, type FileHandle } from 'node:fs/promises';
import { constants, inflateRawSync } from 'node:zlib';
import { csvLine, escapedCellText, LOTE_COLUMNS, LOTE_XLSX_COLUMNS } from '@censo/shared/local';

/** `{"divergencias":[` then `]` or an item whose first key is the batch's own (`arquivo`, or the service's `referencia`). */
const JSON_OUTPUT = /^\uFEFF?\s*\{\s*"divergencias"\s*:\s*\[\s*(\]|\{\s*"(arquivo|referencia)"\s*:)/;
/**
 * Header cells a batch workbook has and no return does: its columns in words (`Arquivo`, `Valor
 * da Receita Federal`, SPEC §3.5), or as named before they were put in words (`codigo_na_escola`).
 */
const WORKBOOK_HEADERS = [[LOTE_XLSX_COLUMNS[0]!, LOTE_XLSX_COLUMNS[5]!], [LOTE_COLUMNS[1]!]].map((cells) =>
  cells.map((cell) => `>${escapedCellText(cell)}<`),
);

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

async function isXlsxOutput(handle: FileHandle): Promise<boolean> {
  // Its first sheet is `divergencias`, and its header is the batch's, inline (as written) or in
  // the shared strings (after a spreadsheet program saved it again). The small workbook part
  // first: a school's return stops there, without inflating the start of its sheet and strings
  // (1.1 ms a file, a fifth of `lote --servidor`'s own CPU on a state's burst).
  const workbook = await zipEntries(handle, ['xl/workbook.xml'], 64 * 1024);
  const firstSheet = /<(?:\w+:)?sheet\b[^>]*\bname="([^"]*)"/.exec(workbook.get('xl/workbook.xml') ?? '');
  if (firstSheet?.[1] !== 'divergencias') return false;
  const parts = await zipEntries(handle, ['xl/worksheets/sheet1.xml', 'xl/sharedStrings.xml'], 64 * 1024);
  const cells = (parts.get('xl/worksheets/sheet1.xml') ?? '') + (parts.get('xl/sharedStrings.xml') ?? '');
  return WORKBOOK_HEADERS.some((header) => header.every((cell) => cells.includes(cell)));
}

/** True when `file` is a batch output (by its content; its name says nothing). Unreadable: false. */
export async function isLoteOutput(file: string): Promise<boolean> {
  const handle = await open(file, 'r').catch(() => null);
  if (handle === null) return false;
  try {
    const start = await head(handle, 4096);
    if (start[0] === 0x50 && start[1] === 0x4b) return await isXlsxOutput(handle);
    const text = start.toString('utf8');
    return JSON_OUTPUT.test(text) || text.startsWith(csvLine(LOTE_COLUMNS)) || text.startsWith(`\uFEFF${csvLine(LOTE_COLUMNS)}`);
  } catch {
    return false;
  } finally {
    await handle.close();
  }
}
