// cluster/autoscale.mjs: KEDA's rule for the workers (deploy/kubernetes/base/worker-scaledobject.yaml)
// as KEDA and the HPA compute it, read from the file itself: the replicas one AverageValue metric
// asks for (and the HPA's tolerance), the larger of the two triggers, the clamp to the minimum and
// the maximum, the scale-down window that holds the highest recent proposal, one pod removed per
// period, the HPA's default scale-up rate, a missing metric, KEDA's cooldown to zero, and the
// controller's calls to its add and remove callbacks.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { autoscale, type Metrics, type Recipe } from '../helpers/autoscale.js';

const { createReplicaCalculator, listKey, loadRecipe, metricsFrom, parseQuery, recipeFromScaledObject, replicasForMetric, samplesOf } =
  autoscale;

const S = 1000;

/** Feeds `steps` ({ at in seconds, metrics }) to a calculator, carrying each decision out; the counts after each. */
function replay(recipe: Recipe, start: number, steps: ReadonlyArray<{ at: number; metrics: Metrics }>): number[] {
  const calculator = createReplicaCalculator(recipe, { start: 0 });
  let current = start;
  return steps.map(({ at, metrics }) => (current = calculator.next({ now: at * S, metrics, current }).desired));
}

/** One poll every `every` seconds from `from`, `count` of them, with the same metrics. */
const polls = (from: number, count: number, every: number, metrics: Metrics) =>
  Array.from({ length: count }, (_, i) => ({ at: from + i * every, metrics }));

const async = (n: number): Metrics => ({ sincronas: 0, assincronas: n });

describe('the recipe, read from the ScaledObject', () => {
  it('has the numbers of the file, in ms, the HPA defaults where the file says nothing', async () => {
    const recipe = await loadRecipe();
    expect(recipe).toMatchObject({
      name: 'censo-worker',
      minReplicaCount: 3,
      maxReplicaCount: 12,
      pollingMs: 15 * S,
      cooldownMs: 300 * S,
      tolerance: 0.1,
      scaleDown: { windowMs: 300 * S, selectPolicy: 'Max', policies: [{ type: 'Pods', value: 1, periodMs: 60 * S }] },
      // Not in the file: the HPA's defaults.
      scaleUp: {
        windowMs: 0,
        selectPolicy: 'Max',
        policies: [
          { type: 'Percent', value: 100, periodMs: 15 * S },
          { type: 'Pods', value: 4, periodMs: 15 * S },
        ],
      },
    });
    expect(recipe.triggers).toEqual([
      { name: 'sincronas', type: 'redis-sentinel', listName: '{censo}:censo-jobs:wait', target: 8, activation: 0 },
      {
        name: 'assincronas',
        type: 'prometheus',
        query: 'max(censo_queue_waiting_by_priority{priority="assincrona"})',
        target: 20,
        activation: 0,
      },
    ]);
  });

  it('is the file: a change there is a change here', () => {
    const doc = parse(readFileSync(autoscale.SCALED_OBJECT, 'utf8')) as { spec: { triggers: Array<{ metadata: Record<string, string> }> } };
    doc.spec.triggers[1]!.metadata.threshold = '50';
    expect(recipeFromScaledObject(doc).triggers[1]!.target).toBe(50);
  });

  it('scales every time by timeScale, and takes its own minimum and maximum', async () => {
    const recipe = await loadRecipe({ timeScale: 1 / 15, minReplicaCount: 1, maxReplicaCount: 4 });
    expect(recipe).toMatchObject({ minReplicaCount: 1, maxReplicaCount: 4, pollingMs: 1 * S, cooldownMs: 20 * S });
    expect(recipe.scaleDown.windowMs).toBe(20 * S);
    expect(recipe.scaleDown.policies[0]!.periodMs).toBe(4 * S);
    expect(recipe.scaleUp.policies.map((p) => p.periodMs)).toEqual([1 * S, 1 * S]);
    expect(() => recipeFromScaledObject({ kind: 'Deployment' })).toThrow(/not a ScaledObject/);
    await expect(loadRecipe({ minReplicaCount: 5, maxReplicaCount: 4 })).rejects.toThrow(/min 5, max 4/);
  });
});

describe('the replicas a metric asks for (AverageValue)', () => {
  it('is ceil(metric / target)', () => {
    expect(replicasForMetric(300, 20, 1)).toBe(15);
    expect(replicasForMetric(25, 20, 1)).toBe(2);
    expect(replicasForMetric(9, 8, 3)).toBe(2);
    expect(replicasForMetric(0, 20, 4)).toBe(0);
  });

  it('is the current count while the metric is within the HPA tolerance (10 %) of target × current', () => {
    expect(replicasForMetric(21, 20, 1)).toBe(1); // 21 / 20 = 1.05
    expect(replicasForMetric(43, 20, 2)).toBe(2); // 43 / 40 = 1.075
    expect(replicasForMetric(37, 20, 2)).toBe(2); // 0.925
    expect(replicasForMetric(45, 20, 2)).toBe(3); // 1.125
    expect(replicasForMetric(35, 20, 2)).toBe(2); // ceil(1.75), out of tolerance but the same count
    expect(replicasForMetric(19, 20, 2)).toBe(1);
  });

  it('is the larger of the two triggers, each against its own target', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1 });
    const calculator = createReplicaCalculator(recipe);
    // 17 synchronous jobs ask for 3 (target 8), 30 tasks for 2 (target 20).
    const decision = calculator.next({ now: 0, metrics: { sincronas: 17, assincronas: 30 }, current: 1 });
    expect(decision.perTrigger).toEqual({ sincronas: 3, assincronas: 2 });
    expect(decision).toMatchObject({ proposal: 3, desired: 3, reason: 'up' });
    const other = createReplicaCalculator(recipe).next({ now: 0, metrics: { sincronas: 0, assincronas: 90 }, current: 1 });
    expect(other).toMatchObject({ perTrigger: { sincronas: 0, assincronas: 5 }, desired: 5 });
  });
});

describe('clamping', () => {
  it('never above maxReplicaCount, whatever the lag', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1, maxReplicaCount: 4 });
    expect(replay(recipe, 1, [{ at: 0, metrics: async(10_000) }])).toEqual([4]);
    const calculator = createReplicaCalculator(recipe);
    expect(calculator.next({ now: 0, metrics: async(10_000), current: 4 })).toMatchObject({ desired: 4, reason: 'at maxReplicaCount' });
    // More than the maximum running (the recipe was changed): back to it at once.
    expect(calculator.next({ now: S, metrics: async(0), current: 7 })).toMatchObject({ desired: 4, reason: 'above maxReplicaCount' });
  });

  it('never below minReplicaCount, even with nothing waiting for long', async () => {
    const recipe = await loadRecipe(); // 3 to 12
    const counts = replay(recipe, 3, polls(0, 100, 15, async(0)));
    expect(new Set(counts)).toEqual(new Set([3]));
    expect(createReplicaCalculator(recipe).next({ now: 0, metrics: async(0), current: 1 })).toMatchObject({
      desired: 3,
      reason: 'below minReplicaCount',
    });
  });
});

describe('scaling up: the HPA default rate (+100 % or +4 pods per 15 s, the larger)', () => {
  it('goes 3 → 7 → 12 under a lag that asks for 50, one step per period', async () => {
    const recipe = await loadRecipe();
    // 3 + 4 = 7 (more than 3 × 2); then 7 × 2 = 14, clamped to 12.
    expect(replay(recipe, 3, polls(0, 3, 15, async(1000)))).toEqual([7, 12, 12]);
    // Two polls inside one period: the second may not add more.
    expect(
      replay(
        recipe,
        3,
        [0, 5, 10, 15].map((at) => ({ at, metrics: async(1000) })),
      ),
    ).toEqual([7, 7, 7, 12]);
  });
});

describe('scaling down: the stabilization window and one pod per period', () => {
  it('holds the highest proposal of the last 300 s, then removes one pod per 60 s', async () => {
    const recipe = await loadRecipe(); // window 300 s, 1 pod per 60 s
    const steps = [
      { at: 0, metrics: async(240) }, // asks for 12
      ...polls(15, 40, 15, async(0)), // 15 s … 600 s: nothing waits
    ];
    const counts = replay(recipe, 12, steps);
    const at = (seconds: number) => counts[steps.findIndex((s) => s.at === seconds)];
    // The 12 proposed at 0 s holds until the window has passed it.
    expect(at(285)).toBe(12);
    expect(at(300)).toBe(11);
    // One pod per 60 s: 11 until 360 s, 10 at 360 s…
    expect(at(345)).toBe(11);
    expect(at(360)).toBe(10);
    expect(at(420)).toBe(9);
    expect(at(600)).toBe(6);
  });

  it('a proposal inside the window holds the count up until it leaves the window', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1 });
    const calculator = createReplicaCalculator(recipe);
    let current = 1;
    const step = (at: number, n: number) => (current = calculator.next({ now: at * S, metrics: async(n), current }).desired);
    step(0, 200); // 10
    expect(current).toBe(5); // the scale-up rate: 1 + 4
    step(15, 200);
    expect(current).toBe(10);
    step(100, 100); // proposes 5: the 10 of 15 s is still in the window
    expect(current).toBe(10);
    expect(calculator.next({ now: 200 * S, metrics: async(0), current })).toMatchObject({
      desired: 10,
      proposal: 0,
      reason: 'held by the scale-down window',
    });
    // At 320 s the window (since 20 s) holds the 5 of 100 s and the 0s: one pod down, then one per 60 s.
    expect(step(320, 0)).toBe(9);
    expect(calculator.next({ now: 350 * S, metrics: async(0), current })).toMatchObject({
      desired: 9,
      reason: 'held by the scale-down policies',
    });
    expect(step(380, 0)).toBe(8);
    // At 400 s the highest in the window (since 100 s) is still the 5 proposed at 100 s.
    expect(step(440, 0)).toBe(7);
    expect(step(500, 0)).toBe(6);
    expect(step(560, 0)).toBe(5);
    expect(step(620, 0)).toBe(4); // the 5 of 100 s is out of the window since 400 s
  });

  it('the window starts with the count the controller found (the HPA seeds it)', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1 });
    // Four workers and nothing waiting from the first poll: none leaves before 300 s.
    const steps = polls(0, 25, 15, async(0));
    const counts = replay(recipe, 4, steps);
    expect(counts.slice(0, 20)).toEqual(Array(20).fill(4));
    expect(counts[20]).toBe(3); // 300 s
  });

  it('the same at any time scale: 1/15 of every time, the same decisions', async () => {
    const full = await loadRecipe({ minReplicaCount: 1, maxReplicaCount: 4 });
    const scaled = await loadRecipe({ minReplicaCount: 1, maxReplicaCount: 4, timeScale: 1 / 15 });
    const lags = [0, 300, 250, 120, 70, 40, 10, ...Array(40).fill(0)] as number[];
    const slow = replay(
      full,
      1,
      lags.map((n, i) => ({ at: i * 15, metrics: async(n) })),
    );
    const fast = replay(
      scaled,
      1,
      lags.map((n, i) => ({ at: i, metrics: async(n) })),
    );
    expect(fast).toEqual(slow);
    expect(slow).toContain(4);
    expect(slow.at(-1)).toBe(1);
  });
});

describe('metrics that cannot be read', () => {
  it('one missing: the other may scale up, never down; none: nothing changes', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1, maxReplicaCount: 4 });
    const calculator = createReplicaCalculator(recipe);
    expect(calculator.next({ now: 0, metrics: { sincronas: null, assincronas: 70 }, current: 1 }).desired).toBe(4);
    expect(calculator.next({ now: 900 * S, metrics: { sincronas: null, assincronas: 0 }, current: 4 }).desired).toBe(4);
    expect(calculator.next({ now: 901 * S, metrics: {}, current: 4 })).toMatchObject({ desired: 4, reason: 'no metrics' });
    // The 4 held at 900 s is a proposal of the window like any other: down once it has left it.
    expect(calculator.next({ now: 902 * S, metrics: { sincronas: 0, assincronas: 0 }, current: 4 }).desired).toBe(4);
    expect(calculator.next({ now: 1201 * S, metrics: { sincronas: 0, assincronas: 0 }, current: 4 }).desired).toBe(3);
  });
});

describe("KEDA's cooldown (minReplicaCount 0 only)", () => {
  it('goes to zero once no trigger has been active for cooldownPeriod, and back to one when one is', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 0, maxReplicaCount: 4 });
    const calculator = createReplicaCalculator(recipe, { start: 0 });
    let current = 1;
    const step = (at: number, metrics: Metrics) => (current = calculator.next({ now: at * S, metrics, current }).desired);
    step(0, { sincronas: 1, assincronas: 0 }); // active
    for (let at = 15; at < 300; at += 15) expect(step(at, async(0))).toBe(1);
    expect(calculator.next({ now: 300 * S, metrics: async(0), current })).toMatchObject({ desired: 0, reason: 'cooldown over' });
    current = 0;
    expect(step(315, async(0))).toBe(0);
    expect(calculator.next({ now: 330 * S, metrics: async(3), current })).toMatchObject({ desired: 1, reason: 'activated' });
  });

  it('with a minimum above zero it plays no part: the way down is the window and one pod per period', async () => {
    const recipe = await loadRecipe(); // 3 to 12
    const counts = replay(recipe, 5, polls(0, 30, 15, async(0)));
    expect(Math.min(...counts)).toBe(3);
    expect(counts.indexOf(4)).toBe(20); // 300 s
  });
});

describe('reading the metrics as KEDA does', () => {
  it('the list of the synchronous jobs under the queue prefix, and the API gauge by the query', async () => {
    expect(listKey('{censo}:censo-jobs:wait', '{test-1}')).toBe('{test-1}:censo-jobs:wait');
    const selector = parseQuery('max(censo_queue_waiting_by_priority{priority="assincrona"})');
    expect(selector).toEqual({ aggregate: 'max', name: 'censo_queue_waiting_by_priority', labels: { priority: 'assincrona' } });
    expect(() => parseQuery('rate(x[5m])')).toThrow(/not replayed/);
    const exposition = [
      '# HELP censo_queue_waiting_by_priority Jobs waiting',
      '# TYPE censo_queue_waiting_by_priority gauge',
      'censo_queue_waiting_by_priority{priority="sincrona"} 7',
      'censo_queue_waiting_by_priority{priority="assincrona"} 42',
      'censo_queue_waiting_by_priority_total{priority="assincrona"} 99',
    ].join('\n');
    expect(samplesOf(exposition, selector)).toEqual([42]);

    const asked: string[] = [];
    const redis = { llen: async (key: string) => (asked.push(key), 5) };
    // No API answers: that trigger is missing, the other is read.
    const read = metricsFrom({ redis, queuePrefix: '{test-1}', apiUrls: ['http://127.0.0.1:9'], timeoutMs: 500 });
    const recipe = await loadRecipe();
    expect(await read(recipe.triggers)).toEqual({ sincronas: 5, assincronas: null });
    expect(asked).toEqual(['{test-1}:censo-jobs:wait']);
  });
});

describe('the controller', () => {
  it('calls addWorker and removeWorker for each replica of a change, and keeps the history', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1, maxReplicaCount: 4, timeScale: 1 / 15 });
    let clock = 0;
    let lag = 0;
    const calls: string[] = [];
    const scaler = autoscale.startAutoscaler({
      recipe,
      readMetrics: async () => ({ sincronas: 0, assincronas: lag }),
      addWorker: () => calls.push('add'),
      removeWorker: async () => void calls.push('remove'),
      replicas: 1,
      poll: false,
      now: () => clock,
    });
    const at = async (seconds: number, n: number) => {
      clock = seconds * S;
      lag = n;
      return scaler.tick();
    };
    expect(await at(0, 300)).toMatchObject({ actual: 1, desired: 4, metrics: { sincronas: 0, assincronas: 300 } });
    expect(scaler.replicas).toBe(4);
    for (let s = 1; s <= 21; s++) await at(s, 0); // the window (20 s) passes the 15 of 0 s: one pod at 20 s
    expect(scaler.replicas).toBe(3);
    for (let s = 22; s <= 40; s++) await at(s, 0); // then one per 4 s: 24, 28 s
    expect(scaler.replicas).toBe(1);
    await scaler.stop();
    expect(calls).toEqual(['add', 'add', 'add', 'remove', 'remove', 'remove']);
    expect(autoscale.scalingEvents(scaler.history).map(({ elapsedMs, from, to }) => [elapsedMs / S, from, to])).toEqual([
      [0, 1, 4],
      [20, 4, 3],
      [24, 3, 2],
      [28, 2, 1],
    ]);
    expect(scaler.errors).toEqual([]);
  });

  it('a callback that throws is recorded, and the polling goes on within its bound', async () => {
    const recipe = await loadRecipe({ minReplicaCount: 1, maxReplicaCount: 2, timeScale: 1 / 1500 }); // a 10 ms poll
    const scaler = autoscale.startAutoscaler({
      recipe,
      readMetrics: async () => ({ sincronas: 100, assincronas: 0 }),
      addWorker: () => {
        throw new Error('no room for a worker');
      },
      removeWorker: () => undefined,
      replicas: 1,
      maxTicks: 5,
    });
    for (let i = 0; i < 200 && scaler.history.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
    await scaler.stop();
    expect(scaler.history).toHaveLength(5);
    expect(scaler.errors).toEqual([expect.objectContaining({ what: 'addWorker', error: expect.stringContaining('no room for a worker') })]);
  });
});
