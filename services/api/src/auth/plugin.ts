// Who may call /api/* besides the keys, and the record of who did (SPEC §8). Always: the access
// log. With OIDC_ISSUER: cookies, the session store (Redis in queue mode, the process otherwise),
// the relying party and the /auth/* routes; `app.staffSessions` is what the /api/* hooks check.
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createRedisClient, throttledErrorLog, type Config, type Logger, type RedisConfig } from '@censo/shared';
import { accessLogPlugin, openAccessLog } from './access-log.js';
import { RelyingParty } from './oidc.js';
import { signInRoutes } from './routes.js';
import { createMemorySessionStore, createRedisSessionStore, type SessionStore } from './session-store.js';
import { SESSION_LIFETIMES, StaffSessions, type SessionLifetimes } from './sessions.js';

export interface StaffAccessOptions {
  readonly config: Config;
  readonly logger: Logger;
  /**
   * Where sessions live, as the task backend decided where the process starts (the app passes
   * its `shared`): the queue's Redis under its prefix, so every replica knows every session, or
   * null for this process. Never read from the config here: the mode is decided in one place.
   */
  readonly shared: { readonly redis: RedisConfig; readonly prefix: string } | null;
  /** SPEC §8's 30 min / 8 h unless a test shortens them; deliberately not a setting. */
  readonly sessionLifetimes?: SessionLifetimes;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** null without OIDC_ISSUER: /api/* then takes keys only. */
    staffSessions: StaffSessions | null;
  }
}

function sessionStore(shared: StaffAccessOptions['shared'], logger: Logger): SessionStore {
  if (shared === null) return createMemorySessionStore();
  // Fail fast: a sign-in or an /api/* call with a session gets its 503 at once while Redis is away.
  const redis = createRedisClient(shared.redis, 'fail-fast');
  const report = throttledErrorLog(logger);
  redis.on('error', (err) => report('sessions', err));
  return createRedisSessionStore(redis, shared.prefix);
}

async function staffAccess(app: FastifyInstance, { config, logger, shared, sessionLifetimes }: StaffAccessOptions): Promise<void> {
  const log = openAccessLog(config.accessLog, (err) => logger.error({ err }, 'access log write failed'));
  await app.register(accessLogPlugin, { log });
  const settings = config.signIn;
  if (settings === null) {
    app.decorate('staffSessions', null);
    // The page asks, and learns it is in key mode from an answer that is not an error (a 404
    // would be an error in the browser's console on every load).
    app.get('/auth/sessao', { schema: { hide: true } }, async (_request, reply) =>
      reply.code(204).header('cache-control', 'no-store').send(),
    );
    return;
  }
  await app.register(cookie);
  const store = sessionStore(shared, logger);
  app.addHook('onClose', async () => store.close());
  const sessions = new StaffSessions(store, settings.sessionSecret, sessionLifetimes ?? SESSION_LIFETIMES, {
    secure: new URL(settings.publicUrl).protocol === 'https:',
  });
  app.decorate('staffSessions', sessions);
  await app.register(signInRoutes, { settings, sessions, relyingParty: new RelyingParty(settings, logger) });
}

/** Root-level, before the /api/* scopes that read `app.staffSessions`. */
export const staffAccessPlugin = fp(staffAccess, { name: 'censo-staff-access', fastify: '5.x', dependencies: ['censo-request-log'] });
