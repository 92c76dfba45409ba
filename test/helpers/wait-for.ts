import { onThisMachine } from './deadline.js';
// Waiting on what a test can observe, with a deadline, instead of sleeping a fixed time.

export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  {
    timeoutMs = onThisMachine(5_000),
    intervalMs = 20,
    what = 'condition',
    // What was last seen, for the failure message: a timeout alone says nothing about why.
    seen,
  }: { timeoutMs?: number; intervalMs?: number; what?: string; seen?: () => string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen ? ` (last seen: ${seen()})` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
