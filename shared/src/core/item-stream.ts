// Items one at a time from a source that produces them a chunk's worth at a time (the return
// readers' rows, a job's divergences): one-at-a-time async iteration without an async
// generator's cost per item.

/** The items of `batches`, one at a time. */
export function itemsOf<T>(batches: AsyncGenerator<T[], void, undefined>): AsyncGenerator<T, void, undefined> {
  return new ItemStream(batches);
}

/**
 * Items one at a time from the batches. An async generator's `yield` costs several promise
 * hops per item, a few hundred milliseconds over a 600k-row return; here an item already read is
 * handed out at once as a resolved promise. return() and throw() go to the batch generator,
 * which closes the file, as stopping a generator would. A next() made while a batch is still
 * being read (a consumer that does not wait) waits for it, so items keep their order.
 */
class ItemStream<T> implements AsyncGenerator<T, void, undefined> {
  private batch: T[] = [];
  private index = 0;
  private refilling: Promise<IteratorResult<T, void>> | null = null;
  private closed = false;

  constructor(private readonly batches: AsyncGenerator<T[], void, undefined>) {}

  next(): Promise<IteratorResult<T, void>> {
    if (this.refilling !== null) {
      const after = (): Promise<IteratorResult<T, void>> => this.next();
      return this.refilling.then(after, after);
    }
    if (this.index < this.batch.length) return Promise.resolve({ value: this.batch[this.index++]!, done: false });
    const refill = this.refill();
    this.refilling = refill;
    return refill;
  }

  private async refill(): Promise<IteratorResult<T, void>> {
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

  return(value?: void | PromiseLike<void>): Promise<IteratorResult<T, void>> {
    this.drop();
    return this.batches.return(value as void).then(() => finished<T>());
  }

  throw(err: unknown): Promise<IteratorResult<T, void>> {
    this.drop();
    return this.batches.throw(err).then(() => finished<T>());
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
function finished<T>(): IteratorResult<T, void> {
  return { value: undefined, done: true };
}
