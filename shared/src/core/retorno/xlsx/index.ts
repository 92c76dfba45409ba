// The xlsx return reader: every worksheet in workbook order, streamed (SPEC §1.2, §5).
import type { RetornoRow } from '../../types.js';
import { badInput } from '../../errors.js';
import { betterCandidate, inSheet, unrecognisedHeader, type ColumnNames, type HeaderCandidate } from '../columns.js';
import { toUnreadable } from '../failure.js';
import { SheetScanner } from './sheet.js';
import { readWorkbook } from './workbook.js';
import { NOT_A_ZIP, ZipArchive } from './zip.js';

/** The rows, a chunk's worth at a time. */
export async function* readXlsxBatches(
  path: string,
  signal: AbortSignal | undefined,
  names: ColumnNames,
  /** Told the school's INEP code from a title row (the first sheet's that has one), after the last row. */
  escola?: (codigo: string) => void,
): AsyncGenerator<RetornoRow[], void, undefined> {
  signal?.throwIfAborted();
  let zip: ZipArchive;
  try {
    zip = await ZipArchive.open(path);
  } catch (err) {
    throw toUnreadable(err, NOT_A_ZIP, signal);
  }
  try {
    const book = await readWorkbook(zip, signal);
    let usable = false;
    let content = false;
    let best: { candidate: HeaderCandidate; sheet: string; index: number } | null = null;
    let codigo: string | null = null;
    for (const [index, part] of book.sheets.entries()) {
      const sheet = new SheetScanner(book, names);
      for await (const chunk of zip.chunks(part, signal)) {
        sheet.feed(chunk.text, chunk.ascii);
        yield sheet.take();
        if (sheet.done) break;
      }
      sheet.end();
      yield sheet.take();
      usable ||= sheet.hasHeader;
      // A title above no header is not a return's: the sheet was skipped.
      if (sheet.hasHeader) codigo ??= sheet.escola;
      content ||= sheet.hasContent;
      if (sheet.candidate && betterCandidate(best?.candidate ?? null, sheet.candidate) !== best?.candidate) {
        best = { candidate: sheet.candidate, sheet: book.sheetNames[index] ?? '', index };
      }
    }
    if (!usable && content && best) {
      throw badInput.unreadableRetorno(unrecognisedHeader(inSheet(best.sheet, best.index, names), best.candidate, names));
    }
    if (codigo !== null) escola?.(codigo);
  } catch (err) {
    throw toUnreadable(err, NOT_A_ZIP, signal);
  } finally {
    zip.close();
  }
}
