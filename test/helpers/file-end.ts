// Work to do when the current test file ends, for helper modules. vitest.config.ts runs most
// files with `isolate: false`: a test process runs several files one after the other and
// evaluates a helper module once, so an `afterAll` at a helper's top level would belong to the
// first of those files alone, and whatever the later ones made would be left behind. The setup
// file (test/setup.ts) runs what was registered here at the end of every file instead.
type Cleanup = () => Promise<void> | void;

const pending = new Set<Cleanup>();

/** Runs `cleanup` once when the current file's tests end (the same function registered twice runs once). */
export function atFileEnd(cleanup: Cleanup): void {
  pending.add(cleanup);
}

/** For test/setup.ts: runs and forgets what the file registered, all of it even when one fails. */
export async function endFile(): Promise<void> {
  const cleanups = [...pending];
  pending.clear();
  const failures = (await Promise.allSettled(cleanups.map(async (cleanup) => cleanup()))).filter(
    (outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected',
  );
  if (failures.length > 0)
    throw new AggregateError(
      failures.map((failure) => failure.reason as unknown),
      'file-end cleanup failed',
    );
}
