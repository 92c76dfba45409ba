// The periodic work of asynchronous intake, on every API process (each pass is safe to run on
// several replicas at once: every change is a guarded commit): recording ends whose hint was missed,
// deleting what has expired in the store and the storage (folder or bucket), closing idle batches,
// and sending webhook messages.
import { settlesWithin, throttledErrorLog, type Logger } from '@censo/shared';
import { Maintenance } from './maintenance.js';
import type { TarefasService } from './service.js';

export interface HousekeepingIntervals {
  readonly reconcileMs: number;
  readonly sweepMs: number;
  readonly webhooksMs: number;
}

/** Sweeps often enough that nothing outlives its retention by more than a twentieth of it (1 s to 1 min). */
export function defaultIntervals(resultTtlMs: number): HousekeepingIntervals {
  return { reconcileMs: 2_000, sweepMs: Math.min(60_000, Math.max(1_000, Math.round(resultTtlMs / 20))), webhooksMs: 1_000 };
}

export interface Housekeeping {
  close(): Promise<void>;
}

export function startHousekeeping(service: TarefasService, log: Logger, intervals: HousekeepingIntervals): Housekeeping {
  const logError = throttledErrorLog(log);
  const running = new Set<Promise<void>>();
  const maintenance = new Maintenance(service, service.jobTimeoutMs);
  const timers = (
    [
      ['reconcile', intervals.reconcileMs, () => maintenance.reconcile()],
      ['sweep', intervals.sweepMs, () => maintenance.sweep()],
      ['webhooks', intervals.webhooksMs, () => service.webhooks.deliverDue()],
    ] as const
  ).map(([name, everyMs, pass]) => {
    // One pass of each kind at a time: a slow one (Redis away, a slow receiver) is not stacked.
    let busy = false;
    return setInterval(() => {
      if (busy) return;
      busy = true;
      const work = pass()
        .catch((err: unknown) => logError(`tarefas ${name}`, err))
        .finally(() => {
          busy = false;
          running.delete(work);
        });
      running.add(work);
    }, everyMs).unref();
  });
  return {
    async close() {
      for (const timer of timers) clearInterval(timer);
      // A pass under way ends within its calls' own deadlines (Redis, storage, a webhook's 10 s);
      // closing waits for it that long at most.
      await settlesWithin(Promise.allSettled([...running]), 15_000);
    },
  };
}
