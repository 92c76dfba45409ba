// Token checks shared by the API and the worker's health server. Pure: strings in, verdict out.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from './config.js';

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

/** The token of an `Authorization: Bearer <token>` header value. */
export function bearerToken(authorization: string | string[] | undefined): string | undefined {
  if (typeof authorization !== 'string') return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}

export type CredentialVerdict = 'ok' | 'unconfigured' | 'invalid';

/**
 * `/metrics`: `Authorization: Bearer <METRICS_TOKEN>` or `x-api-key: <API_KEY>`. Fails closed
 * like SPEC §4: neither configured → 'unconfigured' (503) for everyone.
 */
export function createMetricsCredentialCheck(
  config: Pick<Config, 'metricsToken' | 'apiKeys'>,
): (headers: { authorization?: string | string[]; 'x-api-key'?: string | string[] }) => CredentialVerdict {
  const tokenMatches = createKeyMatcher(config.metricsToken ? [config.metricsToken] : []);
  const keyMatches = createKeyMatcher(config.apiKeys);
  const configured = config.metricsToken !== null || config.apiKeys.length > 0;
  return (headers) => {
    if (!configured) return 'unconfigured';
    const apiKey = headers['x-api-key'];
    // Both checks always run, so the time taken does not say which kind of credential was tried.
    const bearer = tokenMatches(bearerToken(headers.authorization));
    const key = keyMatches(typeof apiKey === 'string' ? apiKey : undefined);
    return bearer || key ? 'ok' : 'invalid';
  };
}
