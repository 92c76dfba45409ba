// Rows one at a time from a reader that produces them a chunk's worth at a time (both return
// readers): the public one-row-at-a-time async iteration, without an async generator's cost per row.
import type { RetornoRow } from '../types.js';

/** The rows of `batches`, one at a time. */
export function rowsOf(batches: AsyncGenerator<RetornoRow[], void, undefined>): AsyncGenerator<RetornoRow, void, undefined> {
  return new RowStream(batches);
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
