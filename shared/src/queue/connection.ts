// The one place that builds Redis clients, for every process that talks to the queue (API:
// producer, waiter, cancel events, rate limiter, readiness, dashboard; worker: its jobs, its
// cancel events, its probe). It returns the client the settings ask for (SPEC §9): a plain
// `redis://`/`rediss://` URL, a master found through Sentinel, or a Redis Cluster.
//
// Two roles, after BullMQ's "going to production" guide and its failover issues:
// - 'worker' (BullMQ Worker / QueueEvents): commands never give up (`maxRetriesPerRequest:
//   null`, which BullMQ requires of blocking connections) and no command timeout (it would cut
//   BZPOPMIN / XREAD BLOCK; BullMQ guards those with its own watchdogs). BullMQ duplicates the
//   client it is given for each connection it needs, so this one stays lazy and never connects.
// - 'fail-fast' (producer, probes, counters): no offline queue, one retry, a command timeout, so
//   a request gets its 503 within a bounded time while Redis is away or silently partitioned;
//   ioredis keeps reconnecting in the background.
// Both reconnect on READONLY (a write reached a master demoted by a failover: it was partitioned,
// not killed) and on UNBLOCKED (Redis ends a blocking read that way when its master becomes a
// replica; without a reconnect the worker would keep waiting for jobs on the replica).
import { createRequire } from 'node:module';
import type { QueueEvents } from 'bullmq';
import type * as IoRedis from 'ioredis';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisConfig } from '../runtime/config.js';
import { settlesWithin } from '../runtime/timeouts.js';
import { MasterSwitchWatcher, type MasterSwitch } from './master-switch.js';

/**
 * ioredis, loaded with the first client: a process without Redis settings (the embedded default)
 * never builds one, and every full collection of its heap would mark the module for nothing.
 */
let ioredis: typeof IoRedis | undefined;
const loadIoredis = () => (ioredis ??= createRequire(import.meta.url)('ioredis') as typeof IoRedis);

export type RedisRole = 'worker' | 'fail-fast';
export type RedisClient = Redis | Cluster;

/**
 * A worker connection whose socket has given no answer for this long is dropped and opened again.
 * Longer than any blocking read BullMQ issues (BZPOPMIN up to its 5 s drain delay, QueueEvents'
 * XREAD BLOCK 10 s); without it, a connection cut silently (a partition, not a closed socket)
 * waits for TCP's backed-off retransmissions, which after a 30 s outage come up to a minute late.
 */
const WORKER_SOCKET_TIMEOUT_MS = 20_000;

/** A fail-fast socket silent this long is dropped, however short its command timeout. */
const MIN_SOCKET_TIMEOUT_MS = 5_000;

/** What a caller may tune on a fail-fast client (the rate limiter gives up sooner). */
export type RedisTuning = Partial<Pick<RedisOptions, 'connectTimeout' | 'commandTimeout' | 'maxRetriesPerRequest' | 'enableOfflineQueue'>>;

/** A fail-fast command gives up after this long unless tuned (a silent partition cannot hang it). */
const FAIL_FAST_COMMAND_TIMEOUT_MS = 3_000;
/** Cluster: how long a slot may stay without a master (failover under way) before a command fails. */
const CLUSTER_DOWN_RETRY_MS = 200;

function reconnectOnDemotion(resend: boolean) {
  // 2 = reconnect and resend the command; 1 = reconnect, the command fails (fail-fast).
  return (err: Error): boolean | 1 | 2 => (/^(READONLY|UNBLOCKED)\b/.test(err.message) ? (resend ? 2 : 1) : false);
}

function roleOptions(role: RedisRole, tune: RedisTuning): RedisOptions {
  if (role === 'worker') {
    return {
      maxRetriesPerRequest: null,
      connectTimeout: 5_000,
      socketTimeout: WORKER_SOCKET_TIMEOUT_MS,
      retryStrategy: (times: number) => Math.min(500 * times, 5_000),
      reconnectOnError: reconnectOnDemotion(true),
      lazyConnect: true,
    };
  }
  const commandTimeout = tune.commandTimeout ?? FAIL_FAST_COMMAND_TIMEOUT_MS;
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout,
    // A command that timed out leaves the socket open; a socket that has heard nothing for
    // twice as long is dropped, so the next request gets a fresh connection instead of a
    // silently dead one. Twice, not once: a process stalled past one command timeout (an
    // overloaded host) must not also lose a connection that is fine.
    socketTimeout: Math.max(2 * commandTimeout, MIN_SOCKET_TIMEOUT_MS),
    retryStrategy: (times: number) => Math.min(250 * times, 2_000),
    reconnectOnError: reconnectOnDemotion(false),
    ...tune,
  };
}

/**
 * ioredis 5 keeps a socket timeout armed when its socket closes, and when it fires it destroys
 * whichever socket the client has then: the new connection after a failover, which then answers
 * 503s for nothing (redis/ioredis#2147, fixed in ioredis 6.0.0, whose RESP3 default BullMQ is not
 * on yet). Clearing the timer when the socket closes is what that fix does. Remove on ioredis 6.
 */
function clearSocketTimeoutOnClose(client: Redis): void {
  const internals = client as unknown as { socketTimeoutTimer?: NodeJS.Timeout };
  client.on('close', () => {
    clearTimeout(internals.socketTimeoutTimer);
    internals.socketTimeoutTimer = undefined;
  });
}

/**
 * The same for a client, a Cluster's node connections, and the copies BullMQ makes of either,
 * each also tracked by `switches` when given.
 */
function guarded<T extends RedisClient>(client: T, switches: MasterSwitchWatcher | null): T {
  if (client instanceof loadIoredis().Cluster) client.on('+node', (node: Redis) => clearSocketTimeoutOnClose(node));
  else {
    clearSocketTimeoutOnClose(client);
    switches?.track(client);
  }
  const duplicate = client.duplicate.bind(client) as (...args: unknown[]) => RedisClient;
  (client as { duplicate: unknown }).duplicate = (...args: unknown[]) => guarded(duplicate(...args), switches);
  return client;
}

/** What a caller may follow of its connections' Redis. */
export interface RedisEvents {
  /**
   * A Sentinel failover of the master group, once each (master-switch.ts). Worker connections
   * through Sentinel only: they are the ones that follow the announcements.
   */
  readonly onMasterSwitch?: (announced: MasterSwitch) => void;
}

/** A new client for `role`; the caller closes it (BullMQ never closes a client it was given). */
export function createRedisClient(redis: RedisConfig, role: RedisRole, tune: RedisTuning = {}, events: RedisEvents = {}): RedisClient {
  if (events.onMasterSwitch && role !== 'worker') throw new Error('only worker connections follow the master switches');
  // Worker connections follow the sentinels' +switch-master (master-switch.ts). Not fail-fast
  // connections: the announcement comes a moment after the promotion, when they have already
  // reconnected to the new master; their writes meet READONLY on a demoted master anyway.
  const switches =
    role === 'worker' && redis.kind === 'sentinel'
      ? new MasterSwitchWatcher(redis, loadIoredis().Redis, { onSwitch: events.onMasterSwitch })
      : null;
  return guarded(buildClient(redis, role, tune), switches);
}

function buildClient(redis: RedisConfig, role: RedisRole, tune: RedisTuning): RedisClient {
  if (role === 'worker' && Object.keys(tune).length > 0) throw new Error('worker connections take no tuning');
  const options = roleOptions(role, tune);
  const tls = redis.kind !== 'url' && redis.tls ? { tls: {} } : {};
  const password = redis.password === null ? {} : { password: redis.password };
  const { Cluster, Redis } = loadIoredis();
  switch (redis.kind) {
    case 'url':
      return new Redis(redis.url, { ...options, ...password });
    case 'sentinel':
      return new Redis({
        ...options,
        ...password,
        ...tls,
        sentinels: redis.sentinels.map(({ host, port }) => ({ host, port })),
        name: redis.name,
        ...(redis.sentinelPassword === null ? {} : { sentinelPassword: redis.sentinelPassword }),
        ...(redis.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
        sentinelCommandTimeout: 2_000,
        sentinelRetryStrategy: (times: number) => Math.min(250 * times, 2_000),
      });
    case 'cluster': {
      // The retry strategy, offline queue and laziness are the cluster's own; its per-node
      // connections keep an offline queue, which the slot refresh needs while a node reconnects.
      const { enableOfflineQueue, retryStrategy, lazyConnect, ...nodeOptions } = options;
      return new Cluster(
        redis.nodes.map(({ host, port }) => ({ host, port })),
        {
          enableOfflineQueue,
          lazyConnect,
          clusterRetryStrategy: retryStrategy,
          redisOptions: { ...nodeOptions, ...password, ...tls },
          // While a failed master's slots have no master yet (CLUSTERDOWN) or move (MOVED),
          // retry a few times a short while apart, then fail (bounded by maxRedirections).
          retryDelayOnClusterDown: CLUSTER_DOWN_RETRY_MS,
          retryDelayOnFailover: CLUSTER_DOWN_RETRY_MS,
          slotsRefreshTimeout: 2_000,
        },
      );
    }
  }
}

/** Ends a client: QUIT when Redis answers in time, else drops the socket. */
export async function closeRedisClient(client: RedisClient, ms = 2_000): Promise<void> {
  if (client.status === 'end' || client.status === 'wait') {
    client.disconnect();
    return;
  }
  const quit = client.quit().then(
    () => undefined,
    () => undefined,
  );
  if (!(await settlesWithin(quit, ms))) client.disconnect();
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
