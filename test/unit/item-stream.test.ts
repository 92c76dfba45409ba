// The batch-to-item iterator the readers and the job pipeline share (core/item-stream.ts): the
// same items in the same order as the batches held, however the consumer calls it, and stopping
// it stops the source as stopping a generator would.
import { describe, expect, it } from 'vitest';
import { itemsOf } from '@censo/shared';

function source(batches: number[][], log: string[]): AsyncGenerator<number[], void, undefined> {
  return (async function* () {
    try {
      for (const batch of batches) {
        await new Promise((resolve) => setImmediate(resolve));
        yield batch;
      }
    } finally {
      log.push('closed');
    }
  })();
}

describe('itemsOf', () => {
  it('hands out every item in order, skipping empty batches', async () => {
    const log: string[] = [];
    const seen: number[] = [];
    for await (const item of itemsOf(source([[1, 2], [], [3], [4, 5, 6]], log))) seen.push(item);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect(log).toEqual(['closed']);
  });

  it('keeps the order for a consumer that asks for many items without waiting', async () => {
    const stream = itemsOf(source([[1], [2, 3], [], [4]], []));
    const results = await Promise.all(Array.from({ length: 6 }, () => stream.next()));
    expect(results.map((r) => (r.done ? 'done' : r.value))).toEqual([1, 2, 3, 4, 'done', 'done']);
  });

  it('return() stops the source (its finally runs) and ends the stream', async () => {
    const log: string[] = [];
    const stream = itemsOf(source([[1, 2], [3]], log));
    expect(await stream.next()).toEqual({ value: 1, done: false });
    expect(await stream.return()).toEqual({ value: undefined, done: true });
    expect(log).toEqual(['closed']);
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('an error of the source reaches the consumer after the items read before it', async () => {
    const failing = (async function* () {
      yield [1, 2];
      throw new Error('ilegível');
    })();
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const item of itemsOf(failing)) seen.push(item);
      })(),
    ).rejects.toThrow('ilegível');
    expect(seen).toEqual([1, 2]);
  });
});
