// Types of usl.mjs, for its unit test (test/unit/usl.test.ts).

export interface UslParameters {
  readonly sigma: number;
  readonly kappa: number;
  readonly lambda: number;
}

export interface UslFit extends UslParameters {
  /** Sum of squared errors of the rates. */
  readonly sse: number;
  readonly r2: number;
  /** sqrt((1−σ)/κ), or null when κ is 0. */
  readonly peakN: number | null;
}

/** The USL's rate at `n` hosts. */
export function uslRate(parameters: UslParameters, n: number): number;

/** Least-squares fit of σ ∈ [0, 1], κ ∈ [0, kappaMax], λ to points of (hosts, rate). */
export function fitUsl(points: ReadonlyArray<{ n: number; rate: number }>, options?: { kappaMax?: number }): UslFit;
