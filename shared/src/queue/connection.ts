// Redis connection settings, in one place for every process that talks to the queue. Two
// profiles: BullMQ's blocking connections wait out an outage (commands retried forever), every
// other connection fails fast so a request gets its 503 at once instead of queueing behind Redis.
import type { QueueEvents, RedisOptions } from 'bullmq';
import { settlesWithin } from '../runtime/timeouts.js';

type Tunable = Partial<Pick<RedisOptions, 'connectTimeout' | 'commandTimeout' | 'maxRetriesPerRequest'>>;

/** For BullMQ Worker / QueueEvents connections: retry forever, reconnect a few seconds apart. */
export function workerConnection(redisUrl: string): RedisOptions & { url: string } {
  return {
    url: redisUrl,
    maxRetriesPerRequest: null,
    connectTimeout: 5_000,
    retryStrategy: (times: number) => Math.min(500 * times, 5_000),
  };
}

/**
 * For producers, probes and counters: no offline queue and at most one retry, so a command fails
 * within its timeout while Redis is away; ioredis keeps reconnecting in the background.
 * Options only: pass the URL beside them (`new Redis(url, failFastConnection())`).
 */
export function failFastConnection(tune: Tunable = {}): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times: number) => Math.min(250 * times, 2_000),
    ...tune,
  };
}

/** Closes a QueueEvents, forcing its connection shut when Redis does not answer in time. */
export async function closeQueueEvents(events: QueueEvents, ms = 2_000): Promise<void> {
  const closed = events.close().catch(() => undefined);
  if (!(await settlesWithin(closed, ms)))
    await events
      .getBackend()
      .close(true)
      .catch(() => undefined);
}

/**
 * While Redis is down every reconnect attempt emits an error; one line per source every 30 s
 * says enough without flooding the logs.
 */
export function throttledErrorLog(log: { warn(obj: object, msg: string): void }, everyMs = 30_000) {
  const last = new Map<string, number>();
  return (source: string, err: unknown) => {
    const now = Date.now();
    if ((last.get(source) ?? 0) + everyMs > now) return;
    last.set(source, now);
    log.warn({ err, source }, 'redis error');
  };
}
