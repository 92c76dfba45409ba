// The application as a plugin tree: routes, hooks and error handling, never `listen` and never
// process.env (STYLE §1). Entry points (server.ts) and tests build it with their own deps.
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';
import type { Config, Logger } from '@censo/shared';
import type { JobRunner } from './jobs/runner.js';
import { requireApiKey } from './http/auth.js';
import { answerClientError } from './http/client-errors.js';
import { deferContinue } from './http/expect-continue.js';
import { Lingerer } from './http/lingering-close.js';
import { registerErrorHandling } from './plugins/errors.js';
import { registerBullBoard } from './plugins/bull-board.js';
import { registerMetrics } from './plugins/metrics.js';
import { registerOpenApi } from './plugins/openapi.js';
import { registerRateLimit } from './plugins/rate-limit.js';
import { registerRequestLog } from './plugins/request-log.js';
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
  /** null when DATABASE_URL is unset: the query route then answers 503 (SPEC §3.3). */
  readonly query: QueryService | null;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, runner, query } = deps;
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
    if (request.raw.complete) return;
    reply.header('connection', 'close');
    lingerer.armResponseClose(request.raw);
  });
  app.addHook('preClose', async () => lingerer.close());

  app.addSchema(erroSchema);
  registerErrorHandling(app);
  registerRequestLog(app);
  await app.register(multipart, { limits: MULTIPART_LIMITS });
  // Operations: OpenAPI before every route (it collects them as they are added); metrics next,
  // so its onResponse hook and `app.metrics` reach all routes.
  await registerOpenApi(app);
  registerMetrics(app, { config, runner, logger: deps.logger });
  // Before the /api/* routes: it attaches a route-level hook to them, which runs after auth.
  await registerRateLimit(app, config);

  const probes: ReadinessProbe[] = [];
  if (runner.mode === 'bullmq') probes.push({ name: 'redis', isReady: () => runner.isReady() });
  if (query) probes.push({ name: 'postgres', isReady: () => query.isReady() });
  await app.register(healthRoutes, { probes });

  await app.register(async (uploads) => {
    uploads.addHook('onRequest', requireApiKey(config.apiKeys));
    await uploads.register(censusReturnRoutes, { config, runner });
  });

  await app.register(async (queries) => {
    queries.addHook('onRequest', requireApiKey(config.queryApiKeys));
    await queries.register(queryRoutes, { service: query });
  });

  // Off unless BULL_BOARD_TOKEN is set and jobs go through BullMQ.
  await registerBullBoard(app, { config, runner, logger: deps.logger });

  app.addHook('onClose', async () => {
    await Promise.all([runner.close(), query?.close()]);
  });
  return app;
}
