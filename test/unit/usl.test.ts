// cluster/usl.mjs: the Universal Scalability Law fit the scale profile (cluster/escala.mjs) puts
// in CLUSTER.md. From points made by the law itself it must give back the σ, κ and λ they were
// made with, and the peak N* = sqrt((1−σ)/κ); with noise, parameters close to them; with no
// crosstalk, κ = 0 and no peak.
import { describe, expect, it } from 'vitest';
import { fitUsl, uslRate } from '../../cluster/usl.mjs';

const HOSTS = [1, 2, 4, 8, 16];

describe('fitUsl', () => {
  it.each([
    { sigma: 0.03, kappa: 0.0008, lambda: 4.8 },
    { sigma: 0.2, kappa: 0.02, lambda: 10 },
    { sigma: 0.01, kappa: 0.05, lambda: 100 },
    { sigma: 0.4, kappa: 0.001, lambda: 0.5 },
  ])('recovers σ=$sigma κ=$kappa λ=$lambda from exact points', (known) => {
    const fit = fitUsl(HOSTS.map((n) => ({ n, rate: uslRate(known, n) })));
    expect(fit.sigma).toBeCloseTo(known.sigma, 6);
    expect(fit.kappa).toBeCloseTo(known.kappa, 7);
    expect(fit.lambda / known.lambda).toBeCloseTo(1, 6);
    expect(fit.peakN).toBeCloseTo(Math.sqrt((1 - known.sigma) / known.kappa), 3);
    expect(fit.r2).toBeCloseTo(1, 9);
  });

  it('linear points: σ = κ = 0, λ the rate of one host, no peak', () => {
    const fit = fitUsl([1, 2, 4, 8].map((n) => ({ n, rate: 3 * n })));
    expect(fit).toMatchObject({ sigma: 0, kappa: 0, peakN: null });
    expect(fit.lambda).toBeCloseTo(3, 9);
  });

  it('contention alone (κ = 0): the rate flattens towards λ/σ and there is no peak', () => {
    const known = { sigma: 0.25, kappa: 0, lambda: 2 };
    const fit = fitUsl(HOSTS.map((n) => ({ n, rate: uslRate(known, n) })));
    expect(fit.sigma).toBeCloseTo(0.25, 6);
    expect(fit.kappa).toBe(0);
    expect(fit.peakN).toBeNull();
  });

  it('noisy points (±2 %, fixed): parameters near the true ones, and the measured rates within 3 %', () => {
    const known = { sigma: 0.05, kappa: 0.002, lambda: 5 };
    const noise = [0.01, -0.02, 0.015, -0.01, 0.02];
    const points = HOSTS.map((n, i) => ({ n, rate: uslRate(known, n) * (1 + noise[i]!) }));
    const fit = fitUsl(points);
    expect(Math.abs(fit.sigma - known.sigma)).toBeLessThan(0.05);
    expect(Math.abs(fit.kappa - known.kappa)).toBeLessThan(0.002);
    expect(Math.abs(fit.lambda / known.lambda - 1)).toBeLessThan(0.05);
    for (const { n, rate } of points) expect(Math.abs(uslRate(fit, n) / rate - 1)).toBeLessThan(0.03);
  });

  it('the rates of the trial in issue 47 (1, 2, 4, 8 hosts): a near-linear fit, σ small', () => {
    const fit = fitUsl([
      { n: 1, rate: 4.8 },
      { n: 2, rate: 9.2 },
      { n: 4, rate: 17.1 },
      { n: 8, rate: 31.5 },
    ]);
    expect(fit.sigma).toBeGreaterThan(0);
    expect(fit.sigma).toBeLessThan(0.1);
    expect(fit.r2).toBeGreaterThan(0.99);
  });

  it('refuses points at fewer than two host counts', () => {
    expect(() => fitUsl([{ n: 4, rate: 10 }])).toThrow('two host counts');
    expect(() => fitUsl([])).toThrow('two host counts');
  });
});
