// The Universal Scalability Law (Gunther): the rate of N equal hosts is
//   X(N) = λN / (1 + σ(N−1) + κN(N−1))
// λ the rate of one host, σ the share of the work that is serialised (contention: one queue, one
// Redis), κ the cost of keeping the hosts coherent with each other (crosstalk: each host's polls
// and events seen by every other), which makes the rate fall past N* = sqrt((1−σ)/κ).
//
// Fitted by least squares on the rates. For a given σ and κ the best λ is a closed form (X is
// linear in λ), so only σ ∈ [0, 1] and κ ≥ 0 are searched: a grid, then grids ever narrower
// around the best point, each half as wide as the last (bounded: a fixed number of rounds; halving,
// not faster, so that a best point found off the long valley σ and κ make together still has the
// true one inside its next grid). No derivatives, so nothing to
// diverge on the few noisy points a benchmark gives; the search box keeps σ and κ physical.

/** The USL's rate at `n` hosts. */
export function uslRate({ sigma, kappa, lambda }, n) {
  return (lambda * n) / (1 + sigma * (n - 1) + kappa * n * (n - 1));
}

/** For σ, κ: the λ that minimises the squared error, and that error. */
function bestLambda(points, sigma, kappa) {
  let fy = 0;
  let ff = 0;
  const shapes = points.map(({ n }) => n / (1 + sigma * (n - 1) + kappa * n * (n - 1)));
  points.forEach(({ rate }, i) => {
    fy += shapes[i] * rate;
    ff += shapes[i] * shapes[i];
  });
  const lambda = ff > 0 ? fy / ff : 0;
  const sse = points.reduce((sum, { rate }, i) => sum + (rate - lambda * shapes[i]) ** 2, 0);
  return { lambda, sse };
}

const GRID = 24;
const ROUNDS = 80;
/** Below this κ is zero: the grid's last digits, not a measured crosstalk. */
const KAPPA_ZERO = 1e-12;

/**
 * Fits σ, κ, λ to points `{ n, rate }` (at least two distinct n; with three or more the fit is
 * determined). Returns them with the sum of squared errors, R², and the peak N* = sqrt((1−σ)/κ)
 * (null when κ is 0: the rate then only flattens, towards λ/σ).
 */
export function fitUsl(points, { kappaMax = 1 } = {}) {
  const usable = points.filter((p) => Number.isFinite(p.n) && Number.isFinite(p.rate) && p.n > 0);
  if (new Set(usable.map((p) => p.n)).size < 2) throw new Error('fitUsl needs rates at two host counts at least');
  let box = { sigma: [0, 1], kappa: [0, kappaMax] };
  let best = { sigma: 0, kappa: 0, ...bestLambda(usable, 0, 0) };
  for (let round = 0; round < ROUNDS; round++) {
    const [s0, s1] = box.sigma;
    const [k0, k1] = box.kappa;
    for (let i = 0; i <= GRID; i++) {
      const sigma = s0 + ((s1 - s0) * i) / GRID;
      for (let j = 0; j <= GRID; j++) {
        const kappa = k0 + ((k1 - k0) * j) / GRID;
        const fit = bestLambda(usable, sigma, kappa);
        if (fit.sse < best.sse) best = { sigma, kappa, ...fit };
      }
    }
    // The next grid: half as wide, centred on the best point, inside the physical box.
    const ds = (s1 - s0) / 4;
    const dk = (k1 - k0) / 4;
    box = {
      sigma: [Math.max(0, best.sigma - ds), Math.min(1, best.sigma + ds)],
      kappa: [Math.max(0, best.kappa - dk), Math.min(kappaMax, best.kappa + dk)],
    };
  }
  const mean = usable.reduce((sum, p) => sum + p.rate, 0) / usable.length;
  const sst = usable.reduce((sum, p) => sum + (p.rate - mean) ** 2, 0);
  const kappa = best.kappa < KAPPA_ZERO ? 0 : best.kappa;
  return {
    sigma: best.sigma,
    kappa,
    lambda: best.lambda,
    sse: best.sse,
    r2: sst > 0 ? 1 - best.sse / sst : 1,
    peakN: kappa > 0 ? Math.sqrt((1 - best.sigma) / kappa) : null,
  };
}
