// x-api-key authentication (SPEC §4). It runs as an onRequest hook, before the body is read, so
// an unauthenticated client cannot make the server store a single byte. Fail closed: no key
// configured → 503 for everyone, before any 401.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiNotConfiguredError, InvalidCredentialError } from '@censo/shared';

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/**
 * Compares digests (fixed length) with timingSafeEqual and visits every configured key, so the
 * time taken says nothing about which key, or how much of it, matched.
 */
export function createKeyMatcher(keys: readonly string[]): (token: string | undefined) => boolean {
  const digests = keys.map(digest);
  return (token) => {
    if (token === undefined) return false;
    const candidate = digest(token);
    let matched = false;
    for (const known of digests) matched = timingSafeEqual(known, candidate) || matched;
    return matched;
  };
}

export function headerToken(request: FastifyRequest, name = 'x-api-key'): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

export function requireApiKey(keys: readonly string[]): onRequestHookHandler {
  const matches = createKeyMatcher(keys);
  return async (request) => {
    if (keys.length === 0) throw new ApiNotConfiguredError();
    if (!matches(headerToken(request))) throw new InvalidCredentialError();
  };
}
