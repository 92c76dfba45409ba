// Per-key rate limit on /api/* (RATE_LIMIT_PER_MINUTE, 0 = off). The hook is route-level, so it
// runs after the scope's auth hook: only requests with a valid key are counted, and they are
// counted by a hash of that key, so the raw key is never a map key, a label or a log field.
import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RateLimitedError } from '@censo/shared';
import { headerToken } from './auth.js';

export function rateLimitKey(request: FastifyRequest): string {
  return createHash('sha256').update(headerToken(request) ?? '', 'utf8').digest('base64url');
}

/** Must be registered before the routes it limits (it attaches itself through onRoute). */
export async function registerRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  if (perMinute <= 0) return;
  await app.register(rateLimit, {
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: rateLimitKey,
    // Health, docs and metrics are not limited: only the routes behind x-api-key.
    allowList: (request) => !(request.routeOptions.url ?? request.url).startsWith('/api/'),
    // Thrown by the plugin after it set Retry-After / x-ratelimit-*: our error handler answers 429 { erro }.
    errorResponseBuilder: () => new RateLimitedError(),
  });
}
