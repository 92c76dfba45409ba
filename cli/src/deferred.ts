// A promise settled later by whoever has its value: the sender resolves a file's task while the
// writer already waits on it (servidor.ts), a batch is resolved when the pool takes it (lote.ts).

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T | PromiseLike<T>): void;
  reject(err: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T | PromiseLike<T>) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((yes, no) => ((resolve = yes), (reject = no)));
  promise.catch(() => {}); // one nobody waits for yet must not be an unhandled rejection
  return { promise, resolve, reject };
}
