// The pair of job metrics both the API and the worker expose: a count and a duration histogram
// by job kind and outcome. One definition, two names: the API measures how long a request waited
// for its job (queue + run), a worker how long it ran the job. And the Redis failovers, which every
// role counts.
import { Counter, Histogram, type Registry } from 'prom-client';
import { onProcessMasterSwitch } from '../queue/master-switch.js';
import type { RedisConfig } from './config.js';

/**
 * How often the default metrics sample the event loop's delay (prom-client's
 * eventLoopMonitoringPrecision). Its default, 10 ms, is a timer firing 100 times a second: 0.45 %
 * of a core in a process that does nothing else (issue 47 wants an idle process under 0.5 %). At
 * 100 ms the lag gauges still see any delay that lasts (the dashboard's event-loop panel) for a
 * tenth of the wakeups.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** Jobs parse files of up to 25 MB and may wait in a queue: a longer tail than plain requests. */
export const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600];

export interface JobMetrics {
  observe(kind: string, outcome: string, seconds?: number): void;
}

export function createJobMetrics(
  registry: Registry,
  { prefix, countHelp, durationHelp }: { readonly prefix: string; readonly countHelp: string; readonly durationHelp: string },
): JobMetrics {
  const count = new Counter({
    name: `${prefix}jobs_total`,
    help: countHelp,
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: `${prefix}job_duration_seconds`,
    help: durationHelp,
    labelNames: ['kind', 'outcome'] as const,
    buckets: JOB_BUCKETS,
    registers: [registry],
  });
  return {
    observe(kind, outcome, seconds) {
      count.inc({ kind, outcome });
      if (seconds !== undefined) duration.observe({ kind, outcome }, seconds);
    },
  };
}

export const FAILOVERS_METRIC = 'censo_redis_failovers_total';

export interface FailoverCounter {
  readonly counter: Counter<'grupo'>;
  /** Stops counting (the app closes; tests build several in one process). */
  stop(): void;
}

/**
 * censo_redis_failovers_total (issue 34; every role since issue 48) in `registry`: the Sentinel
 * failovers of the master group that any connection of this process following the sentinels has
 * heard (shared/src/queue/master-switch.ts), once per failover. Null without Sentinel: with a
 * plain URL or a Cluster there is no announcement to count.
 */
export function createFailoverCounter(registry: Registry, redis: RedisConfig | null): FailoverCounter | null {
  if (redis?.kind !== 'sentinel') return null;
  const counter = new Counter({
    name: FAILOVERS_METRIC,
    help: 'Redis Sentinel failovers of the master group (+switch-master) this process has heard of.',
    labelNames: ['grupo'] as const,
    registers: [registry],
  });
  const grupo = redis.name;
  // At 0 from the start, so the first failover is an increase Prometheus can see.
  counter.inc({ grupo }, 0);
  const stop = onProcessMasterSwitch((announced) => {
    if (announced.name === grupo) counter.inc({ grupo });
  });
  return { counter, stop };
}
