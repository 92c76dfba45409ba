// Deadlines derived from how fast this machine runs right now, not fixed numbers: a laptop or a
// CI runner shared with other jobs is a busy machine, and a test that only passes on a quiet one
// says the code is broken when it is not. A reference operation (parse, serialize and hash a
// JSON document, the kind of work the service does) is timed once, at the suite's start, against
// its time on a quiet 2-core machine; every deadline a test needs is its quiet-machine budget
// times that slowdown. vitest.config.ts calibrates and hands the factor to the test processes
// through TEST_SLOWDOWN (set it yourself to force one); a process started without it calibrates
// on first use.
import { createHash } from 'node:crypto';

/** The reference operation's median on a quiet 2-core machine (measured 2026-11-29: 24–26 ms). */
const QUIET_MS = 25;
// A deadline grows with the load but never shrinks below the quiet budget, and a wedged machine
// still ends the run.
const MIN_FACTOR = 1;
const MAX_FACTOR = 20;

const SAMPLE = JSON.stringify(
  Array.from({ length: 4000 }, (_, i) => ({ i, nome: `pessoa ${i}`, cpf: String(i * 7919).padStart(11, '0') })),
);

function referenceMs(): number {
  const started = process.hrtime.bigint();
  for (let k = 0; k < 18; k++)
    createHash('sha256')
      .update(JSON.stringify(JSON.parse(SAMPLE)))
      .digest('hex');
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** How many times slower than a quiet machine the reference runs now (median of 7, the first one warming up). */
export function calibrate(): number {
  const runs = Array.from({ length: 7 }, referenceMs).sort((a, b) => a - b);
  const factor = runs[3]! / QUIET_MS;
  return Math.min(MAX_FACTOR, Math.max(MIN_FACTOR, Number(factor.toFixed(2))));
}

let cached: number | undefined;

/** The machine's slowdown: TEST_SLOWDOWN when the suite set it, otherwise calibrated once per process. */
export function slowdown(): number {
  if (cached === undefined) {
    const given = Number(process.env.TEST_SLOWDOWN);
    cached = Number.isFinite(given) && given > 0 ? given : calibrate();
  }
  return cached;
}

/** A deadline for something that takes at most `quietMs` on a quiet machine, scaled to this one. */
export function onThisMachine(quietMs: number): number {
  return Math.ceil(quietMs * slowdown());
}
