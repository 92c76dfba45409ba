// Deadlines on promises that have none of their own (Redis commands, pool probes, closes).
// The timer is cleared as soon as the race is decided and never keeps the process alive.

/** Resolves or rejects like `promise`, or rejects after `ms` if it has not settled by then. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Whether `promise` settled (either way) within `ms`. */
export function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return withTimeout(settled, ms).catch(() => false);
}
