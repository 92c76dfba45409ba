// The xlsx return reader: every worksheet in workbook order, streamed (SPEC §1.2, §5).
import type { RetornoRow } from '../../types.js';
import { badInput } from '../../errors.js';
import { MISSING_ROLES } from '../columns.js';
import { toUnreadable } from '../failure.js';
import { SheetScanner } from './sheet.js';
import { readWorkbook } from './workbook.js';
import { NOT_A_ZIP, ZipArchive } from './zip.js';

export async function* readXlsxRetorno(path: string, signal?: AbortSignal): AsyncGenerator<RetornoRow, void, undefined> {
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
    for (const part of book.sheets) {
      const sheet = new SheetScanner(book);
      for await (const chunk of zip.text(part, signal)) {
        sheet.feed(chunk);
        for (const row of sheet.take()) yield row;
        if (sheet.done) break;
      }
      sheet.end();
      for (const row of sheet.take()) yield row;
      usable ||= sheet.hasHeader;
      content ||= sheet.hasContent;
    }
    if (!usable && content) throw badInput.unreadableRetorno(MISSING_ROLES);
  } catch (err) {
    throw toUnreadable(err, NOT_A_ZIP, signal);
  } finally {
    zip.close();
  }
}
