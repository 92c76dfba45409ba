// Per-key rate limit on /api/* (RATE_LIMIT_PER_MINUTE, 0 = off). The hook is route-level, so it
// runs after the scope's auth hook: only requests with a valid key are counted, and they are
// counted by a hash of that key, so the raw key is never a map key, a label or a log field.
// In queue mode (the task backend's decision, jobs/task-backend.ts) the counters live in the queue's
// Redis, so the limit holds across every API replica.
// A Redis that does not answer within 500 ms lets the request through unchecked (fail open: a
// slow counter must not hold the service); each such request is counted in
// `censo_rate_limit_skipped_total` and the first of an outage is logged, so an operator can see
// the limit was not applied.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import rateLimit, {
  type FastifyRateLimitStore,
  type FastifyRateLimitStoreCtor,
  type RateLimitPluginOptions as StoreParams,
} from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter } from 'prom-client';
import { RateLimitedError, createRedisClient, settlesWithin, type Config, type Logger, type RedisClient } from '@censo/shared';
import { headerToken } from '../http/auth.js';
import type { SharedRedis } from '../jobs/task-backend.js';

export function rateLimitKey(request: FastifyRequest): string {
  return createHash('sha256')
    .update(headerToken(request) ?? (request.principal?.kind === 'pessoa' ? `pessoa:${request.principal.session.sub}` : ''), 'utf8')
    .digest('base64url');
}

export type RateLimitOptions = Pick<Config, 'rateLimitPerMinute'>;

/** How long the limiter waits for Redis before letting a request through unchecked. */
const REDIS_CHECK_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 1_000;
/** How long the start waits for the limiter's connection (a few tries of it). */
const STARTUP_WAIT_MS = 2_000;

type RedisStoreClass = new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: RedisClient,
  key: string,
) => FastifyRateLimitStore;

/**
 * The plugin's own Redis store (its Lua counter, not a copy of it), with the outcome of every
 * count reported to `counted` before the plugin sees it (on an error its skipOnError lets the
 * request through). The plugin has no hook of its own for that; the store is a file of the
 * package, which has no `exports` map.
 */
function observedRedisStore(redis: RedisClient, nameSpace: string, counted: (err: Error | null) => void) {
  const RedisStore = createRequire(import.meta.url)('@fastify/rate-limit/store/RedisStore.js') as RedisStoreClass;
  const observed = (inner: FastifyRateLimitStore): FastifyRateLimitStore => ({
    incr: (key, done, timeWindow, max) =>
      inner.incr(
        key,
        (err, result) => {
          counted(err);
          done(err, result);
        },
        timeWindow,
        max,
      ),
    child: (params) => observed(inner.child(params)),
  });
  // The plugin builds a custom store with `new Store(its settings)`; a constructor may return another object.
  return function ObservedRedisStore(params: StoreParams) {
    return observed(new RedisStore(params.continueExceeding ?? false, params.exponentialBackoff ?? false, redis, nameSpace));
  } as unknown as FastifyRateLimitStoreCtor;
}

export interface RateLimitPluginOptions {
  readonly config: RateLimitOptions;
  /** Where the counters live, as the task backend decided (jobs/task-backend.ts): null, this process. */
  readonly shared: SharedRedis | null;
  readonly logger: Pick<Logger, 'warn' | 'info'>;
}

async function rateLimitPerKey(app: FastifyInstance, { config, shared, logger }: RateLimitPluginOptions): Promise<void> {
  const perMinute = config.rateLimitPerMinute;
  if (perMinute <= 0) return;
  let store: FastifyRateLimitStoreCtor | undefined;
  if (shared) {
    // A slow or absent Redis must not hold requests: fail the check fast and let it pass.
    const redis = createRedisClient(shared.redis, 'fail-fast', {
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: REDIS_CHECK_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
    });
    redis.on('error', () => undefined); // the queue's own connections already report outages
    app.addHook('onClose', async () => void redis.disconnect());
    // Connected before the routes answer: a check made while the connection is still opening
    // would pass unchecked (no offline queue), and every restart would count some. Failed tries
    // (a ready check past the command timeout) reconnect on their own; the wait is bounded, so a
    // Redis that is down holds the start only that long.
    if (redis.status !== 'ready') await settlesWithin(new Promise((resolve) => redis.once('ready', resolve)), STARTUP_WAIT_MS);
    const skippedTotal = new Counter({
      name: 'censo_rate_limit_skipped_total',
      help: 'Requests let through without a rate-limit check because Redis did not answer the limiter in time.',
      registers: [app.metrics.registry],
    });
    // One line when the checks start failing and one when they work again, not one per request.
    let outage = false;
    store = observedRedisStore(redis, `${shared.prefix}:rate-limit:`, (err) => {
      if (err) {
        skippedTotal.inc();
        if (!outage) logger.warn({ err }, 'rate limit not applied: Redis did not answer the limiter, requests pass unchecked');
      } else if (outage) logger.info('rate limit applied again: the limiter reaches Redis');
      outage = err !== null;
    });
  }
  await app.register(rateLimit, {
    max: perMinute,
    ...(store ? { store, skipOnError: true } : {}),
    timeWindow: 60_000,
    keyGenerator: rateLimitKey,
    // Health, docs and metrics are not limited: only the routes behind x-api-key.
    allowList: (request) => !(request.routeOptions.url ?? request.url).startsWith('/api/'),
    // Thrown by the plugin after it set Retry-After / x-ratelimit-*: our error handler answers 429 { erro }.
    errorResponseBuilder: () => new RateLimitedError(),
  });
}

/** Register before the routes it limits: @fastify/rate-limit attaches itself through onRoute. */
export const rateLimitPlugin = fp(rateLimitPerKey, {
  name: 'censo-rate-limit',
  fastify: '5.x',
  dependencies: ['censo-errors', 'censo-metrics'],
});
