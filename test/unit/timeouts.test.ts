import { describe, expect, it } from 'vitest';
import { settlesWithin, withTimeout } from '@censo/shared';

const never = new Promise<never>(() => undefined);

describe('withTimeout', () => {
  it('passes a value or an error through when the promise is in time', async () => {
    await expect(withTimeout(Promise.resolve(7), 1000)).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error('boom')), 1000)).rejects.toThrow('boom');
  });

  it('rejects once the deadline passes', async () => {
    await expect(withTimeout(never, 20)).rejects.toThrow('no answer within 20 ms');
  });
});

describe('settlesWithin', () => {
  it('is true for a promise that settles either way in time, false past the deadline', async () => {
    expect(await settlesWithin(Promise.resolve(), 1000)).toBe(true);
    expect(await settlesWithin(Promise.reject(new Error('x')), 1000)).toBe(true);
    expect(await settlesWithin(never, 20)).toBe(false);
  });
});
