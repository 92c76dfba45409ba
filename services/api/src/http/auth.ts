// x-api-key authentication (SPEC §4). It runs as an onRequest hook, before the body is read, so
// an unauthenticated client cannot make the server store a single byte. Fail closed: no key
// configured → 503 for everyone, before any 401. With staff sign-in (SPEC §8) a request without the
// header may carry a session instead; `/api/*` never redirects, whatever is missing.
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import { ApiNotConfiguredError, CsrfInvalidError, InvalidCredentialError, PermissionDeniedError, createKeyMatcher } from '@censo/shared';
import type { Permission } from '../auth/permissions.js';
import { csrfMatches, type StaffSessions } from '../auth/sessions.js';

export function headerToken(request: FastifyRequest, name = 'x-api-key'): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The index of the matching key in its setting, or -1; every key is compared, in constant time. */
function createKeyIndex(keys: readonly string[]): (token: string | undefined) => number {
  const matchers = keys.map((key) => createKeyMatcher([key]));
  return (token) => matchers.reduce((found, matches, index) => (matches(token) && found < 0 ? index : found), -1);
}

export function requireApiKey(keys: readonly string[]): onRequestHookHandler {
  return requireCredential(keys, null);
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The /api/* check. A request with `x-api-key` is judged by the key alone (SPEC §4). Without it,
 * and with sign-in configured (`sessions`), a staff session that holds `permission` (else 403), and
 * for a state-changing request its CSRF token in `x-csrf-token` (else 403). Neither → 401.
 */
export function requireCredential(
  keys: readonly string[],
  staff: { readonly sessions: StaffSessions; readonly permission: Permission } | null,
): onRequestHookHandler {
  const keyIndex = createKeyIndex(keys);
  return async (request) => {
    const token = headerToken(request);
    if (token !== undefined || staff === null) {
      if (keys.length === 0) throw new ApiNotConfiguredError();
      const index = keyIndex(token);
      if (index < 0) throw new InvalidCredentialError();
      request.principal = { kind: 'chave', index };
      return;
    }
    const current = await staff.sessions.current(request);
    // Sign-in configured counts as configured: no session is a 401, even with no key set.
    if (current === null) throw new InvalidCredentialError();
    request.principal = { kind: 'pessoa', sessionId: current.id, session: current.session };
    if (!current.session.permissoes.includes(staff.permission)) throw new PermissionDeniedError();
    if (STATE_CHANGING.has(request.method) && !csrfMatches(current.session, headerToken(request, 'x-csrf-token'))) {
      throw new CsrfInvalidError();
    }
  };
}
