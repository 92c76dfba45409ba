// The xlsx return reader: every worksheet in workbook order, streamed (SPEC §1.2, §5).
import type { RetornoRow } from '../../types.js';
import { badInput } from '../../errors.js';
import { betterCandidate, BUILTIN_COLUMN_NAMES, unrecognisedHeader, type ColumnNames, type HeaderCandidate } from '../columns.js';
import { toUnreadable } from '../failure.js';
import { SheetScanner } from './sheet.js';
import { readWorkbook } from './workbook.js';
import { NOT_A_ZIP, ZipArchive } from './zip.js';

export function readXlsxRetorno(
  path: string,
  signal?: AbortSignal,
  names: ColumnNames = BUILTIN_COLUMN_NAMES,
): AsyncGenerator<RetornoRow, void, undefined> {
  return new RowStream(readBatches(path, signal, names));
}

/** The rows, a chunk's worth at a time. */
async function* readBatches(
  path: string,
  signal: AbortSignal | undefined,
  names: ColumnNames,
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
    let best: { candidate: HeaderCandidate; sheet: string } | null = null;
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
      content ||= sheet.hasContent;
      if (sheet.candidate && betterCandidate(best?.candidate ?? null, sheet.candidate) !== best?.candidate) {
        best = { candidate: sheet.candidate, sheet: book.sheetNames[index] ?? '' };
      }
    }
    if (!usable && content && best) {
      throw badInput.unreadableRetorno(unrecognisedHeader(`na planilha "${best.sheet}"`, best.candidate));
    }
  } catch (err) {
    throw toUnreadable(err, NOT_A_ZIP, signal);
  } finally {
    zip.close();
  }
}

/**
 * Rows one at a time from the batches. An async generator's `yield` costs several promise
 * hops per row, a few hundred milliseconds over a 600k-row return; here a row already read is
 * handed out at once as a resolved promise. return() and throw() go to the batch generator,
 * which closes the file, as stopping a generator would. A next() made while a batch is still
 * being read (a consumer that does not wait) waits for it, so rows keep their order.
 */
class RowStream implements AsyncGenerator<RetornoRow, void, undefined> {
  private batch: RetornoRow[] = [];
  private index = 0;
  private refilling: Promise<IteratorResult<RetornoRow, void>> | null = null;
  private closed = false;

  constructor(private readonly batches: AsyncGenerator<RetornoRow[], void, undefined>) {}

  next(): Promise<IteratorResult<RetornoRow, void>> {
    if (this.refilling !== null) {
      const after = (): Promise<IteratorResult<RetornoRow, void>> => this.next();
      return this.refilling.then(after, after);
    }
    if (this.index < this.batch.length) return Promise.resolve({ value: this.batch[this.index++]!, done: false });
    const refill = this.refill();
    this.refilling = refill;
    return refill;
  }

  private async refill(): Promise<IteratorResult<RetornoRow, void>> {
    try {
      for (;;) {
        const result = await this.batches.next();
        if (result.done) return { value: undefined, done: true };
        const rows = result.value;
        if (rows.length === 0) continue;
        if (!this.closed) {
          this.batch = rows;
          this.index = 1;
        }
        return { value: rows[0]!, done: false };
      }
    } finally {
      this.refilling = null;
    }
  }

  return(value?: void | PromiseLike<void>): Promise<IteratorResult<RetornoRow, void>> {
    this.drop();
    return this.batches.return(value as void).then(finished);
  }

  throw(err: unknown): Promise<IteratorResult<RetornoRow, void>> {
    this.drop();
    return this.batches.throw(err).then(finished);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private drop(): void {
    this.closed = true;
    this.batch = [];
    this.index = 0;
  }
}

/** The batch generator ends without yielding from return() and throw(): its finally never yields. */
function finished(): IteratorResult<RetornoRow, void> {
  return { value: undefined, done: true };
}
