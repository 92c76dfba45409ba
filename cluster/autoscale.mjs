// KEDA's rule for the workers (deploy/kubernetes/base/worker-scaledobject.yaml) replayed on one
// machine: every pollingInterval the two metrics KEDA reads are read, the replica count KEDA and
// the HPA it drives would ask for is computed, and workers are added or removed through the
// caller's callbacks. Issue 47 ("autoscaling replayed"); used by test/integration/autoscale.test.ts
// and meant for the scale profile (cluster/escala.mjs).
//
// The interface (everything a benchmark profile needs; times in ms unless the name says seconds):
//
//   const recipe = await loadRecipe({ timeScale: 1 / 15, minReplicaCount: 1, maxReplicaCount: 4 });
//     Reads the ScaledObject (`file`, default SCALED_OBJECT) with the `yaml` package and returns
//     its numbers: minReplicaCount, maxReplicaCount, pollingMs, cooldownMs, the HPA behaviour
//     (scaleUp / scaleDown: windowMs, selectPolicy, policies [{ type, value, periodMs }]; the
//     HPA's defaults where the file says nothing) and the triggers [{ name, type, target,
//     activation, listName | query }]. Every time is multiplied by `timeScale` (whole ms; 1/15: the 15 s
//     poll becomes 1 s, the 300 s window 20 s, the 60 s period 4 s); `minReplicaCount` and
//     `maxReplicaCount` replace the file's (a 2-core machine holds no 12 workers).
//     recipeFromScaledObject(doc, options) does the same from an already parsed document.
//
//   const readMetrics = metricsFrom({ redis, queuePrefix, apiUrls, apiKey });
//     The metrics as KEDA gets them: LLEN of the synchronous jobs' wait list (the trigger's
//     listName, its `{censo}` prefix replaced by `queuePrefix`) through `redis` (anything with
//     ioredis's `llen(key)`), and the Prometheus query, evaluated on the APIs' own /metrics
//     (`max(censo_queue_waiting_by_priority{priority="assincrona"})`: the largest sample over
//     `apiUrls`, as Prometheus would over the replicas it scrapes). A metric that cannot be read
//     is null for that poll.
//
//   const scaler = startAutoscaler({ recipe, readMetrics, addWorker, removeWorker, replicas: 1 });
//     Polls every recipe.pollingMs until stop(). `replicas` is how many workers run at the start.
//     addWorker() starts one more worker; removeWorker() stops one (SIGTERM: it drains, then
//     exits). Both may return promises: the controller does not wait for them between polls (a
//     Deployment's replica count changes at once, its pods come and go on their own time), but
//     stop() waits for the ones still under way. A callback that throws is recorded in the
//     history (`errors`) and does not stop the controller.
//       scaler.history   [{ at (epoch ms), elapsedMs, metrics: { [trigger name]: number | null },
//                          proposal, desired, actual (before this poll's change), reason }]
//       scaler.replicas  the replica count asked for now
//       scaler.tick()    one poll now (the loop's own step; tests drive it by hand with `poll: false`)
//       scaler.stop()    ends the polling and waits for callbacks under way
//     Options: `poll` (default true: start the loop), `maxTicks` (a bound on the polls),
//     `metricsTimeoutMs` (a poll whose read takes longer has no metrics: nothing changes),
//     `now` (a clock), `onDecision(entry)` (called after each poll).
//
//   scalingEvents(history) → [{ at, elapsedMs, from, to }], one per change of the replica count.
//
//   createReplicaCalculator(recipe, { start }) is the pure decision, no I/O and no timers:
//     calculator.next({ now, metrics, current }) → { desired, proposal, perTrigger, active, reason }
//     It remembers what the HPA remembers (the recommendations of the stabilization windows, the
//     scale events of the policies' periods, KEDA's last active time) and assumes each decision it
//     returns is carried out.
//
// What is replayed, as KEDA 2.x and the HPA (autoscaling/v2) compute it:
// - each trigger is an AverageValue metric: the HPA proposes ceil(metric / target), or the current
//   count when metric / (target × current) is within the HPA's 10 % tolerance of 1; the proposal
//   is the largest over the triggers. With a metric missing, the others may scale up but never down;
//   with none, nothing changes.
// - stabilization: a scale-down goes no lower than the highest proposal of the last scale-down
//   window (seeded with the count at the start, as the HPA does), a scale-up no higher than the
//   lowest of the scale-up window (0 s by default: none).
// - rate policies: the count may fall to (the count at the period's start − value) for a Pods
//   policy (the recipe: 1 pod per 60 s) or by value % for a Percent one, and rise by the HPA's
//   default (+100 % or +4 pods per 15 s, whichever is more); selectPolicy Max takes the policy
//   allowing the larger change. The result is clamped to [max(1, minReplicaCount), maxReplicaCount].
// - cooldownPeriod is KEDA's, and KEDA applies it only to the step to zero: with minReplicaCount 0
//   the workers go to 0 once no trigger has been active (metric above its activation value,
//   default 0) for cooldownPeriod, and back to 1 when one is; with minReplicaCount above 0 (the
//   recipe's 3) the way down to the minimum is the HPA's: the window, then one pod per period.
// - the HPA's own sync period (15 s by default, the same as pollingInterval here) is taken to be
//   pollingInterval: one decision per poll.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));

/** The recipe replayed by default. */
export const SCALED_OBJECT = path.join(ROOT, 'deploy', 'kubernetes', 'base', 'worker-scaledobject.yaml');

/** The HPA's tolerance: a metric within 10 % of its target changes nothing. */
export const HPA_TOLERANCE = 0.1;

// KEDA's and the HPA's defaults, for what a ScaledObject leaves out.
const KEDA_POLLING_S = 30;
const KEDA_COOLDOWN_S = 300;
const KEDA_MIN = 0;
const KEDA_MAX = 100;
const HPA_SCALE_UP = {
  stabilizationWindowSeconds: 0,
  selectPolicy: 'Max',
  policies: [
    { type: 'Percent', value: 100, periodSeconds: 15 },
    { type: 'Pods', value: 4, periodSeconds: 15 },
  ],
};
const HPA_SCALE_DOWN = {
  stabilizationWindowSeconds: 300,
  selectPolicy: 'Max',
  policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }],
};

/** The default queue prefix the recipe's list name carries (QUEUE_PREFIX's default). */
const RECIPE_PREFIX = '{censo}';
/** The synchronous jobs' queue (shared/src/queue/contract.ts JOB_QUEUE). */
const JOB_QUEUE = 'censo-jobs';

/** Seconds of the recipe as whole ms of the replay. */
const msOf = (seconds, timeScale) => Math.round(seconds * 1000 * timeScale);

const number = (value, what, fallback) => {
  if (value === undefined || value === null || value === '') {
    if (fallback === undefined) throw new Error(`the ScaledObject has no ${what}`);
    return fallback;
  }
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`the ScaledObject's ${what} is not a number: ${JSON.stringify(value)}`);
  return n;
};

function behaviourOf(spec, defaults, where, timeScale) {
  const window = number(spec?.stabilizationWindowSeconds, `${where}.stabilizationWindowSeconds`, defaults.stabilizationWindowSeconds);
  const selectPolicy = spec?.selectPolicy ?? defaults.selectPolicy;
  if (!['Max', 'Min', 'Disabled'].includes(selectPolicy))
    throw new Error(`${where}.selectPolicy ${selectPolicy} is not Max, Min or Disabled`);
  const policies = (spec?.policies ?? defaults.policies).map((policy, i) => {
    if (policy.type !== 'Pods' && policy.type !== 'Percent')
      throw new Error(`${where}.policies[${i}].type ${policy.type} is not Pods or Percent`);
    return {
      type: policy.type,
      value: number(policy.value, `${where}.policies[${i}].value`),
      periodMs: msOf(number(policy.periodSeconds, `${where}.policies[${i}].periodSeconds`), timeScale),
    };
  });
  return { windowMs: msOf(window, timeScale), selectPolicy, policies };
}

function triggerOf(trigger, index) {
  const meta = trigger.metadata ?? {};
  const metricType = trigger.metricType ?? 'AverageValue';
  if (metricType !== 'AverageValue')
    throw new Error(`trigger ${index} (${trigger.type}): only AverageValue metrics are replayed, not ${metricType}`);
  if (trigger.type === 'redis' || trigger.type === 'redis-sentinel' || trigger.type === 'redis-cluster') {
    const listName = meta.listName;
    if (typeof listName !== 'string' || !listName) throw new Error(`trigger ${index} (${trigger.type}) has no listName`);
    return {
      name: listName.endsWith(`:${JOB_QUEUE}:wait`) ? 'sincronas' : `s${index}-${trigger.type}`,
      type: trigger.type,
      listName,
      target: number(meta.listLength, `trigger ${index} listLength`, 5),
      activation: number(meta.activationListLength, `trigger ${index} activationListLength`, 0),
    };
  }
  if (trigger.type === 'prometheus') {
    const query = meta.query;
    if (typeof query !== 'string' || !query) throw new Error(`trigger ${index} (prometheus) has no query`);
    return {
      name: /priority="assincrona"/.test(query) ? 'assincronas' : `s${index}-prometheus`,
      type: trigger.type,
      query,
      target: number(meta.threshold, `trigger ${index} threshold`),
      activation: number(meta.activationThreshold, `trigger ${index} activationThreshold`, 0),
    };
  }
  throw new Error(`trigger ${index}: type ${trigger.type} is not replayed (redis, redis-sentinel, redis-cluster, prometheus)`);
}

/** The replay's numbers from a parsed ScaledObject; see the top of the file. */
export function recipeFromScaledObject(doc, { timeScale = 1, minReplicaCount, maxReplicaCount, file = null } = {}) {
  if (doc?.kind !== 'ScaledObject') throw new Error(`not a ScaledObject: kind ${doc?.kind}`);
  if (!(timeScale > 0)) throw new Error(`timeScale must be above 0, not ${timeScale}`);
  const spec = doc.spec ?? {};
  const behavior = spec.advanced?.horizontalPodAutoscalerConfig?.behavior ?? {};
  const min = minReplicaCount ?? number(spec.minReplicaCount, 'minReplicaCount', KEDA_MIN);
  const max = maxReplicaCount ?? number(spec.maxReplicaCount, 'maxReplicaCount', KEDA_MAX);
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < Math.max(1, min)) {
    throw new Error(`replicas must be whole numbers with 0 ≤ min ≤ max and max ≥ 1: min ${min}, max ${max}`);
  }
  const triggers = (spec.triggers ?? []).map(triggerOf);
  if (triggers.length === 0) throw new Error('the ScaledObject has no triggers');
  return {
    file,
    name: doc.metadata?.name ?? null,
    timeScale,
    minReplicaCount: min,
    maxReplicaCount: max,
    pollingMs: msOf(number(spec.pollingInterval, 'pollingInterval', KEDA_POLLING_S), timeScale),
    cooldownMs: msOf(number(spec.cooldownPeriod, 'cooldownPeriod', KEDA_COOLDOWN_S), timeScale),
    tolerance: HPA_TOLERANCE,
    scaleUp: behaviourOf(behavior.scaleUp, HPA_SCALE_UP, 'scaleUp', timeScale),
    scaleDown: behaviourOf(behavior.scaleDown, HPA_SCALE_DOWN, 'scaleDown', timeScale),
    triggers,
  };
}

/** Reads the ScaledObject at `file` (default SCALED_OBJECT); see the top of the file. */
export async function loadRecipe({ file = SCALED_OBJECT, ...options } = {}) {
  return recipeFromScaledObject(parse(await readFile(file, 'utf8')), { ...options, file });
}

/** The HPA's proposal for one AverageValue metric (GetExternalPerPodMetricReplicas). */
export function replicasForMetric(value, target, current, tolerance = HPA_TOLERANCE) {
  if (current > 0 && Math.abs(1 - value / (target * current)) <= tolerance) return current;
  return Math.ceil(value / target);
}

/** Replicas added (or removed) by the events of the last `periodMs`. */
const changedWithin = (events, now, periodMs) => events.reduce((sum, e) => (e.at > now - periodMs ? sum + e.change : sum), 0);

/** How high the policies let the count go now (calculateScaleUpLimitWithScalingRules). */
function scaleUpLimit(rules, current, ups, downs, now) {
  if (rules.selectPolicy === 'Disabled') return current;
  let limit = rules.selectPolicy === 'Min' ? Infinity : -Infinity;
  for (const policy of rules.policies) {
    const periodStart = current - changedWithin(ups, now, policy.periodMs) + changedWithin(downs, now, policy.periodMs);
    const proposed = policy.type === 'Pods' ? periodStart + policy.value : Math.ceil(periodStart * (1 + policy.value / 100));
    limit = rules.selectPolicy === 'Min' ? Math.min(limit, proposed) : Math.max(limit, proposed);
  }
  return limit;
}

/** How low the policies let the count go now (calculateScaleDownLimitWithBehaviors). */
function scaleDownLimit(rules, current, ups, downs, now) {
  if (rules.selectPolicy === 'Disabled') return current;
  let limit = rules.selectPolicy === 'Min' ? -Infinity : Infinity;
  for (const policy of rules.policies) {
    const periodStart = current - changedWithin(ups, now, policy.periodMs) + changedWithin(downs, now, policy.periodMs);
    const proposed = policy.type === 'Pods' ? periodStart - policy.value : Math.trunc(periodStart * (1 - policy.value / 100));
    limit = rules.selectPolicy === 'Min' ? Math.max(limit, proposed) : Math.min(limit, proposed);
  }
  return limit;
}

const finite = (value) => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** Why a decision of the HPA's part is what it is, in a few words (for the history). */
function reasonOf({ current, proposal, stabilized, desired, hpaMin, hpaMax }) {
  if (desired > current) return desired < Math.min(stabilized, hpaMax) ? 'up, limited by the scale-up policies' : 'up';
  if (desired < current) return desired > Math.max(stabilized, hpaMin) ? 'down, limited by the scale-down policies' : 'down';
  if (proposal === current) return 'steady';
  if (proposal > current) {
    if (current >= hpaMax) return 'at maxReplicaCount';
    return stabilized <= current ? 'held by the scale-up window' : 'held by the scale-up policies';
  }
  if (current <= hpaMin) return 'at minReplicaCount';
  return stabilized >= current ? 'held by the scale-down window' : 'held by the scale-down policies';
}

/** The pure decision; see the top of the file. `start`: when the replay starts (KEDA's first active time). */
export function createReplicaCalculator(recipe, { start = 0 } = {}) {
  const hpaMin = Math.max(1, recipe.minReplicaCount);
  const hpaMax = recipe.maxReplicaCount;
  /** The unstabilized proposals of the windows: { at, replicas }. */
  let recommendations = null;
  /** Changes carried out: { at, change } (change > 0). */
  let ups = [];
  let downs = [];
  let lastActive = start;
  const longest = (rules) => Math.max(0, ...rules.policies.map((p) => p.periodMs));

  function carriedOut(now, current, desired) {
    if (desired > current) ups.push({ at: now, change: desired - current });
    if (desired < current) downs.push({ at: now, change: current - desired });
    ups = ups.filter((e) => e.at > now - longest(recipe.scaleUp));
    downs = downs.filter((e) => e.at > now - longest(recipe.scaleDown));
  }

  /** stabilizeRecommendationWithBehaviors: the proposal held within the windows' bounds, and recorded. */
  function stabilize(now, current, proposal) {
    // maybeInitScaleDownStabilizationWindow: the first look starts the window at the current count.
    if (recommendations === null) recommendations = recipe.scaleDown.windowMs > 0 ? [{ at: now, replicas: current }] : [];
    let up = proposal;
    let down = proposal;
    for (const rec of recommendations) {
      if (rec.at > now - recipe.scaleUp.windowMs) up = Math.min(up, rec.replicas);
      if (rec.at > now - recipe.scaleDown.windowMs) down = Math.max(down, rec.replicas);
    }
    const keep = Math.max(recipe.scaleUp.windowMs, recipe.scaleDown.windowMs);
    recommendations = recommendations.filter((rec) => rec.at > now - keep);
    recommendations.push({ at: now, replicas: proposal });
    return Math.min(Math.max(current, up), down);
  }

  /** convertDesiredReplicasWithBehaviorRate: the rate policies, and the HPA's min and max. */
  function limitRate(now, current, desired) {
    if (desired > current) {
      const limit = Math.max(current, scaleUpLimit(recipe.scaleUp, current, ups, downs, now));
      return Math.min(desired, hpaMax, limit);
    }
    if (desired < current) {
      const limit = Math.min(current, scaleDownLimit(recipe.scaleDown, current, ups, downs, now));
      return Math.max(desired, hpaMin, limit);
    }
    return desired;
  }

  return {
    next({ now, metrics = {}, current }) {
      if (!Number.isInteger(current) || current < 0) throw new Error(`current replicas must be a whole number, not ${current}`);
      const readings = recipe.triggers.map((trigger) => ({ trigger, value: finite(metrics[trigger.name]) }));
      const valid = readings.filter((r) => r.value !== null);
      const active = valid.some((r) => r.value > r.trigger.activation);
      if (active) lastActive = now;
      const perTrigger = {};
      const decide = (desired, reason, proposal = null) => {
        carriedOut(now, current, desired);
        return { desired, proposal, perTrigger, active, reason };
      };

      // KEDA's part: the steps between 0 and 1, with minReplicaCount 0 only.
      if (current === 0) {
        if (recipe.minReplicaCount > 0) return decide(hpaMin, 'below minReplicaCount');
        return decide(active ? 1 : 0, active ? 'activated' : 'inactive');
      }
      const allRead = valid.length === readings.length;
      if (recipe.minReplicaCount === 0 && allRead && !active && now - lastActive >= recipe.cooldownMs) return decide(0, 'cooldown over');

      // The HPA's part.
      if (current > hpaMax) return decide(hpaMax, 'above maxReplicaCount');
      if (current < hpaMin) return decide(hpaMin, 'below minReplicaCount');
      if (valid.length === 0) return decide(current, 'no metrics');
      let proposal = 0;
      for (const { trigger, value } of valid) {
        perTrigger[trigger.name] = replicasForMetric(value, trigger.target, current, recipe.tolerance);
        proposal = Math.max(proposal, perTrigger[trigger.name]);
      }
      // A metric missing: the others may scale up, never down.
      if (!allRead && proposal < current) proposal = current;
      const stabilized = stabilize(now, current, proposal);
      const desired = limitRate(now, current, stabilized);
      return decide(desired, reasonOf({ current, proposal, stabilized, desired, hpaMin, hpaMax }), proposal);
    },
  };
}

/** `listName` with the recipe's `{censo}` queue prefix replaced by `queuePrefix`. */
export function listKey(listName, queuePrefix = RECIPE_PREFIX) {
  const at = listName.indexOf(`:${JOB_QUEUE}:`);
  return at < 0 ? listName : `${queuePrefix}${listName.slice(at)}`;
}

/**
 * A PromQL query of the one shape the recipe uses: `[max|min|sum](name{label="value", …})`, or
 * the bare selector. Anything else throws: this is not Prometheus.
 */
export function parseQuery(query) {
  const m = /^\s*(?:(max|min|sum)\s*\(\s*)?([A-Za-z_:][\w:]*)\s*(?:\{([^}]*)\})?\s*(\))?\s*$/.exec(query);
  if (!m || Boolean(m[1]) !== Boolean(m[4])) throw new Error(`query not replayed: ${query}`);
  const labels = {};
  for (const part of (m[3] ?? '').split(',')) {
    if (!part.trim()) continue;
    const label = /^\s*([A-Za-z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*$/.exec(part);
    if (!label) throw new Error(`query not replayed (only label="value" matchers): ${query}`);
    labels[label[1]] = label[2];
  }
  return { aggregate: m[1] ?? 'max', name: m[2], labels };
}

/** The values of the samples of the Prometheus text `exposition` that `selector` picks. */
export function samplesOf(exposition, { name, labels }) {
  const out = [];
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name) || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = {};
    for (const pair of (m[2] ?? '').matchAll(/([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"/g)) have[pair[1]] = pair[2];
    if (Object.entries(labels).every(([key, value]) => have[key] === value)) out.push(Number(m[3]));
  }
  return out;
}

const AGGREGATE = { max: (xs) => Math.max(...xs), min: (xs) => Math.min(...xs), sum: (xs) => xs.reduce((a, b) => a + b, 0) };

/** The metrics as KEDA reads them; see the top of the file. */
export function metricsFrom({ redis, queuePrefix = RECIPE_PREFIX, apiUrls = [], apiKey, timeoutMs = 2_000 }) {
  const urls = Array.isArray(apiUrls) ? apiUrls : [apiUrls];
  const scrape = async () => {
    const texts = await Promise.allSettled(
      urls.map(async (url) => {
        const response = await fetch(new URL('/metrics', url), {
          headers: apiKey ? { 'x-api-key': apiKey } : {},
          signal: AbortSignal.timeout(timeoutMs),
        });
        if (!response.ok) throw new Error(`GET /metrics: HTTP ${response.status}`);
        return response.text();
      }),
    );
    return texts.filter((t) => t.status === 'fulfilled').map((t) => t.value);
  };
  return async (triggers) => {
    const metrics = {};
    let scraped = null;
    for (const trigger of triggers) {
      try {
        if (trigger.listName !== undefined) {
          if (!redis) throw new Error('no redis client');
          metrics[trigger.name] = Number(await redis.llen(listKey(trigger.listName, queuePrefix)));
        } else {
          scraped ??= await scrape();
          if (scraped.length === 0) throw new Error('no API answered /metrics');
          const selector = parseQuery(trigger.query);
          const values = scraped.flatMap((text) => samplesOf(text, selector));
          // KEDA's prometheus scaler reads an empty answer as 0 (ignoreNullValues, true by default).
          metrics[trigger.name] = values.length === 0 ? 0 : AGGREGATE[selector.aggregate](values);
        }
      } catch {
        metrics[trigger.name] = null;
      }
    }
    return metrics;
  };
}

/** The controller; see the top of the file. */
export function startAutoscaler({
  recipe,
  readMetrics,
  addWorker,
  removeWorker,
  replicas = recipe.minReplicaCount,
  poll = true,
  maxTicks = Infinity,
  metricsTimeoutMs = Math.max(recipe.pollingMs, 1_000),
  now = Date.now,
  onDecision,
}) {
  const started = now();
  const calculator = createReplicaCalculator(recipe, { start: started });
  const history = [];
  const errors = [];
  const underWay = new Set();
  let actual = replicas;
  let ticks = 0;
  let stopped = false;
  const stopping = new AbortController();

  const call = (what, fn) => {
    const done = Promise.resolve()
      .then(fn)
      .catch((err) => void errors.push({ at: now(), what, error: String(err?.stack ?? err) }))
      .finally(() => underWay.delete(done));
    underWay.add(done);
  };

  async function read() {
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve(null), metricsTimeoutMs)));
    try {
      return (await Promise.race([readMetrics(recipe.triggers).catch(() => null), timeout])) ?? {};
    } finally {
      clearTimeout(timer);
    }
  }

  async function tick() {
    ticks++;
    const metrics = await read();
    const at = now();
    const before = actual;
    const decision = calculator.next({ now: at, metrics, current: before });
    const entry = {
      at,
      elapsedMs: at - started,
      metrics: Object.fromEntries(recipe.triggers.map((t) => [t.name, finite(metrics[t.name])])),
      proposal: decision.proposal,
      desired: decision.desired,
      actual: before,
      reason: decision.reason,
    };
    history.push(entry);
    actual = decision.desired;
    for (let i = before; i < actual; i++) call('addWorker', addWorker);
    for (let i = before; i > actual; i--) call('removeWorker', removeWorker);
    onDecision?.(entry);
    return entry;
  }

  const loop = poll
    ? (async () => {
        while (!stopped && ticks < maxTicks) {
          const began = now();
          try {
            await tick();
          } catch (err) {
            errors.push({ at: now(), what: 'tick', error: String(err?.stack ?? err) });
          }
          const wait = Math.max(0, recipe.pollingMs - (now() - began));
          await sleep(wait, undefined, { signal: stopping.signal }).catch(() => undefined);
        }
      })()
    : Promise.resolve();

  return {
    recipe,
    history,
    errors,
    get replicas() {
      return actual;
    },
    tick,
    async stop() {
      stopped = true;
      stopping.abort();
      await loop;
      // Callbacks started by a callback's own end are not expected; two rounds bound the wait.
      for (let round = 0; round < 2 && underWay.size > 0; round++) await Promise.allSettled([...underWay]);
    },
  };
}

/** One entry per change of the replica count in a history: { at, elapsedMs, from, to }. */
export function scalingEvents(history) {
  return history.filter((e) => e.desired !== e.actual).map((e) => ({ at: e.at, elapsedMs: e.elapsedMs, from: e.actual, to: e.desired }));
}
