// The pair of job metrics both the API and the worker expose: a count and a duration histogram
// by job kind and outcome. One definition, two names: the API measures how long a request waited
// for its job (queue + run), a worker how long it ran the job.
import { Counter, Histogram, type Registry } from 'prom-client';

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
