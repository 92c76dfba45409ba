// The application as a plugin tree: routes, hooks and error handling, never `listen` and never
// process.env. Entry points (server.ts) and tests build it with their own deps.
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';
import type { Config, Logger, Storage } from '@censo/shared';
import type { JobRunner } from './jobs/runner.js';
import { requireApiKey } from './http/auth.js';
import { answerClientError } from './http/client-errors.js';
import { deferContinue } from './http/expect-continue.js';
import { Lingerer } from './http/lingering-close.js';
import { errorsPlugin } from './plugins/errors.js';
import { bullBoardPlugin } from './plugins/bull-board.js';
import { pagePlugin } from './plugins/page.js';
import { metricsPlugin } from './plugins/metrics.js';
import { openApiPlugin } from './plugins/openapi.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { requestLogPlugin } from './plugins/request-log.js';
import { MULTIPART_LIMITS } from './http/uploads.js';
import type { QueryService } from './query/service.js';
import { censusReturnRoutes } from './routes/census-return.js';
import { queryRoutes } from './routes/query.js';
import { healthRoutes, type ReadinessProbe } from './routes/health.js';
import { erroSchema } from './routes/schemas.js';

export interface AppDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly runner: JobRunner;
  /** Where uploads and results live; the caller owns it (closes it after the app). */
  readonly storage: Storage;
  /** null when DATABASE_URL is unset: the query route then answers 503 (SPEC §3.3). */
  readonly query: QueryService | null;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, runner, storage, query } = deps;
  const lingerer = new Lingerer();
  const app = Fastify({
    clientErrorHandler: answerClientError(lingerer),
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request, written by request-log.ts with the route, status and job.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // Uploads are streamed by @fastify/multipart; this limit only bounds other bodies.
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
  });

  deferContinue(app.server);
  // Answered before the body was read to its end (no key, rate limit, overload, a bad first
  // part...): the unread rest cannot stay in front of the next request on this keep-alive
  // socket, so the connection closes after the answer, lingering so the client can read it.
  app.addHook('onSend', async (request, reply) => {
    // A success has read its body; the last bytes of its framing may still be in flight, and the
    // keep-alive connection takes care of them.
    if (request.raw.complete || reply.statusCode < 400) return;
    reply.header('connection', 'close');
    lingerer.armResponseClose(request.raw);
  });
  app.addHook('preClose', async () => {
    lingerer.close();
    // close() ends the connections that are idle when it starts; one still reading the last bytes
    // of a request (a chunked body's terminator after its response went out) turns idle later,
    // and would then hold close() for the whole keep-alive timeout (72 s). Keep sweeping.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50).unref();
    app.server.once('close', () => clearInterval(sweep));
  });

  app.addSchema(erroSchema);
  // Plugins declare their dependencies (fastify-plugin), so Fastify refuses a wrong order. Those
  // that act on routes as they are added (OpenAPI, rate limit) come before every route.
  await app.register(errorsPlugin);
  await app.register(requestLogPlugin);
  await app.register(multipart, { limits: MULTIPART_LIMITS });
  await app.register(openApiPlugin);
  await app.register(metricsPlugin, { config, runner, logger: deps.logger });
  // Attaches a route-level hook to the /api/* routes, which runs after the scope's auth hook.
  await app.register(rateLimitPlugin, config);

  const probes: ReadinessProbe[] = [];
  if (runner.mode === 'bullmq') probes.push({ name: 'redis', isReady: () => runner.isReady() });
  if (query) probes.push({ name: 'postgres', isReady: () => query.isReady() });
  if (storage.kind === 's3') probes.push({ name: 'storage', isReady: () => storage.isReady() });
  await app.register(healthRoutes, { probes });

  await app.register(async (uploads) => {
    uploads.addHook('onRequest', requireApiKey(config.apiKeys));
    await uploads.register(censusReturnRoutes, { config, runner, storage });
  });

  await app.register(async (queries) => {
    queries.addHook('onRequest', requireApiKey(config.queryApiKeys));
    await queries.register(queryRoutes, { service: query });
  });

  await app.register(bullBoardPlugin, { config, runner, logger: deps.logger });
  await app.register(pagePlugin);

  app.addHook('onClose', async () => {
    await Promise.all([runner.close(), query?.close()]);
  });
  return app;
}
