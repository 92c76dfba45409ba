// Per-key rate limit on /api/* (RATE_LIMIT_PER_MINUTE, 0 = off). The hook is route-level, so it
// runs after the scope's auth hook: only requests with a valid key are counted, and they are
// counted by a hash of that key, so the raw key is never a map key, a label or a log field.
// With Redis configured the counters live in Redis, so the limit holds across every API replica.
import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { RateLimitedError, createRedisClient, type Config } from '@censo/shared';
import { headerToken } from '../http/auth.js';

export function rateLimitKey(request: FastifyRequest): string {
  return createHash('sha256')
    .update(headerToken(request) ?? (request.principal?.kind === 'pessoa' ? `pessoa:${request.principal.session.sub}` : ''), 'utf8')
    .digest('base64url');
}

export type RateLimitOptions = Pick<Config, 'rateLimitPerMinute' | 'redis' | 'queuePrefix'>;

async function rateLimitPerKey(app: FastifyInstance, config: RateLimitOptions): Promise<void> {
  const perMinute = config.rateLimitPerMinute;
  if (perMinute <= 0) return;
  const redis = config.redis
    ? // A slow or absent Redis must not hold requests: fail the check fast and let it pass.
      createRedisClient(config.redis, 'fail-fast', { connectTimeout: 1_000, commandTimeout: 500, maxRetriesPerRequest: 0 })
    : null;
  if (redis) {
    redis.on('error', () => undefined); // the queue's own connections already report outages
    app.addHook('onClose', async () => void redis.disconnect());
  }
  await app.register(rateLimit, {
    max: perMinute,
    ...(redis ? { redis, nameSpace: `${config.queuePrefix}:rate-limit:`, skipOnError: true } : {}),
    timeWindow: 60_000,
    keyGenerator: rateLimitKey,
    // Health, docs and metrics are not limited: only the routes behind x-api-key.
    allowList: (request) => !(request.routeOptions.url ?? request.url).startsWith('/api/'),
    // Thrown by the plugin after it set Retry-After / x-ratelimit-*: our error handler answers 429 { erro }.
    errorResponseBuilder: () => new RateLimitedError(),
  });
}

/** Register before the routes it limits: @fastify/rate-limit attaches itself through onRoute. */
export const rateLimitPlugin = fp(rateLimitPerKey, { name: 'censo-rate-limit', fastify: '5.x', dependencies: ['censo-errors'] });
