// x-api-key authentication (SPEC §4). It runs as an onRequest hook, before the body is read, so
// an unauthenticated client cannot make the server store a single byte. Fail closed: no key
// configured → 503 for everyone, before any 401.
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiNotConfiguredError, InvalidCredentialError, createKeyMatcher } from '@censo/shared';

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
