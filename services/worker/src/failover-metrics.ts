// censo_redis_failovers_total (issue 34): a Sentinel failover is over in seconds, before an alert
// on Redis being unreachable could fire; this counter keeps it for `increase()` in the rules
// (deploy/monitoring/alertas.yml, CensoRedisFailover). The worker counts what its connections
// hear from the sentinels (shared/src/queue/master-switch.ts, once per failover), and the process
// serves it: the worker's health server, or the API's /metrics under `npm start`.
import { Counter } from 'prom-client';
import type { Config } from '@censo/shared';

export interface FailoverMetrics {
  readonly counter: Counter<'grupo'>;
  /** For the worker connections' `onMasterSwitch`. */
  onMasterSwitch(): void;
}

/** Null without Sentinel: with a plain URL or a Cluster there is no announcement to count. */
export function createFailoverMetrics(redis: NonNullable<Config['redis']>): FailoverMetrics | null {
  if (redis.kind !== 'sentinel') return null;
  const counter = new Counter({
    name: 'censo_redis_failovers_total',
    help: 'Redis Sentinel failovers of the master group (+switch-master) this process has heard of.',
    labelNames: ['grupo'] as const,
    // No registry of its own: the process registers it where its /metrics reads (never the global one).
    registers: [],
  });
  const grupo = redis.name;
  // At 0 from the start, so the first failover is an increase Prometheus can see.
  counter.inc({ grupo }, 0);
  return { counter, onMasterSwitch: () => counter.inc({ grupo }) };
}
