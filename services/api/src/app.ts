// The application as a plugin tree: routes, hooks and error handling, never `listen` and never
// process.env. Entry points (server.ts) and tests build it with their own deps.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import multipart from '@fastify/multipart';
import { httpMessages, type Config, type Logger, type Storage } from '@censo/shared';
import type { JobRunner } from './jobs/runner.js';
import type { TaskBackend } from './jobs/task-backend.js';
import { requireCredential } from './http/auth.js';
import { staffAccessPlugin } from './auth/plugin.js';
import type { SessionLifetimes } from './auth/sessions.js';
import { answerClientError } from './http/client-errors.js';
import { deferContinue } from './http/expect-continue.js';
import { Lingerer } from './http/lingering-close.js';
import { errorsPlugin } from './plugins/errors.js';
import { bullBoardPlugin } from './plugins/bull-board.js';
import { pagePlugin } from './plugins/page.js';
import { metricsPlugin } from './plugins/metrics.js';
import { openApiPlugin } from './plugins/openapi.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { requestId, requestLogPlugin } from './plugins/request-log.js';
import { MULTIPART_LIMITS } from './http/uploads.js';
import type { QueryService } from './query/service.js';
import { retornoRoutes } from './routes/retorno.js';
import { queryRoutes } from './routes/query.js';
import { healthRoutes, type ReadinessProbe } from './routes/health.js';
import { erroSchema } from './routes/schemas.js';
import { correcoesRoutes } from './routes/correcoes.js';
import { tarefasRoutes } from './routes/tarefas/routes.js';
import { loteSchema, tarefaSchema } from './routes/tarefas/schemas.js';
import { tarefasPlugin, type TarefasTuning } from './plugins/tarefas.js';
import type { Safra } from './safra/index.js';
import { safrasRoutes } from './routes/safras.js';

export interface AppDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly runner: JobRunner;
  /**
   * The asynchronous tasks' store and execution (jobs/task-backend.ts), of the mode the entry
   * point chose: embedded, a pool of their own at BATCH_NICENESS so a burst never takes the
   * synchronous requests' threads; queue mode, the tasks' queue. Closed with the app.
   */
  readonly tasks: TaskBackend;
  /** Where uploads and results live; the caller owns it (closes it after the app). */
  readonly storage: Storage;
  /** null when DATABASE_URL is unset: the query route then answers 503 (SPEC §3.3). */
  readonly query: QueryService | null;
  /** The season ledger (SPEC §13); null or absent: no season kept. The caller owns it (closes it after the app). */
  readonly safra?: Safra | null;
  /** Asynchronous intake's clock and housekeeping pace (tests only). */
  readonly tarefas?: TarefasTuning;
  /** Tests only: shorter staff session lifetimes than SPEC §8's (never a setting). */
  readonly sessionLifetimes?: SessionLifetimes;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, runner, storage, query } = deps;
  const lingerer = new Lingerer();
  const app = Fastify({
    clientErrorHandler: answerClientError(lingerer),
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One line per request, written by request-log.ts with the route, status and job.
    logController: new LogController({ disableRequestLogging: true }),
    // request-log.ts takes the x-request-id header only when it is short and plain.
    requestIdHeader: false,
    genReqId: (req) => requestId(req.headers),
    // A path that does not decode (`/%E0%A4%A`) is refused before routing; Fastify's default body
    // would break the {"erro"} rule (SPEC §5) and echo the path, which may be anything.
    frameworkErrors: (_error, _request, reply) => void (reply as FastifyReply).code(400).send({ erro: httpMessages.badUrl }),
    // Uploads are streamed by @fastify/multipart; this limit only bounds other bodies.
    bodyLimit: 1024 * 1024,
    // Fastify's own 503 while closing is an `{"error"}` body written past every hook (SPEC §5
    // wants `{"erro"}`), and an error where none is needed: the hook below serves the request.
    return503OnClosing: false,
    // X-Forwarded-Proto/For count only from the proxies TRUST_PROXY names (SPEC §9): request.protocol
    // then says https behind the TLS proxy (Secure cookies) and request.ip is the client's address.
    trustProxy: typeof config.trustProxy === 'boolean' ? config.trustProxy : [...config.trustProxy],
  });

  deferContinue(app.server);
  // A request that reaches this replica once it is closing (a keep-alive connection that had a
  // request in flight when a rolling upgrade began) is served like any other: the close waits
  // for it anyway. Its connection then closes, so the client's next request goes elsewhere.
  let closing = false;
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
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
    closing = true;
    lingerer.close();
    // close() ends the connections that are idle when it starts; one still reading the last bytes
    // of a request (a chunked body's terminator after its response went out) turns idle later,
    // and would then hold close() for the whole keep-alive timeout (72 s). Keep sweeping.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50).unref();
    app.server.once('close', () => clearInterval(sweep));
  });

  app.addSchema(erroSchema);
  app.addSchema(tarefaSchema);
  app.addSchema(loteSchema);
  // Plugins declare their dependencies (fastify-plugin), so Fastify refuses a wrong order. Those
  // that act on routes as they are added (OpenAPI, rate limit) come before every route.
  await app.register(errorsPlugin);
  await app.register(requestLogPlugin);
  await app.register(multipart, { limits: MULTIPART_LIMITS });
  await app.register(openApiPlugin);
  await app.register(metricsPlugin, { config, runner, logger: deps.logger });
  // Attaches a route-level hook to the /api/* routes, which runs after the scope's auth hook.
  await app.register(rateLimitPlugin, { config, shared: deps.tasks.shared, logger: deps.logger });
  // Sessions and /auth/* (with OIDC_ISSUER) and the access log, before the /api/* scopes.
  await app.register(staffAccessPlugin, {
    config,
    logger: deps.logger,
    shared: deps.tasks.shared,
    sessionLifetimes: deps.sessionLifetimes,
  });
  const staff = app.staffSessions;

  const probes: ReadinessProbe[] = [];
  if (runner.mode === 'bullmq') probes.push({ name: 'redis', isReady: () => runner.isReady() });
  if (query) probes.push({ name: 'postgres', isReady: () => query.isReady() });
  if (storage.kind === 's3') probes.push({ name: 'storage', isReady: () => storage.isReady() });
  // No API_KEY: every key-holding caller gets 503 (SPEC §4); not ready, and /readyz says why (§9).
  // With staff sign-in the people are the callers: a deployment without an integration is whole.
  const noCaller = config.apiKeys.length === 0 && config.signIn === null;
  await app.register(healthRoutes, { probes, missing: noCaller ? ['api_key'] : [] });

  // Asynchronous intake (SPEC §7): tasks and batches belong to the principal that created them.
  await app.register(tarefasPlugin, {
    safra: deps.safra ?? null,
    config,
    runner,
    backend: deps.tasks,
    storage,
    logger: deps.logger,
    ...(deps.tarefas ? { tuning: deps.tarefas } : {}),
  });
  await app.register(async (uploads) => {
    uploads.addHook('onRequest', requireCredential(config.apiKeys, staff && { sessions: staff, permission: 'retorno' }));
    // Results, lists of divergences and persons, the corrected file: CPFs and names, in every
    // format (SPEC §7.1). No answer of these routes is worth keeping in a shared or browser cache.
    uploads.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });
    await uploads.register(retornoRoutes, { config, runner, storage });
    await uploads.register(tarefasRoutes);
    // A batch's corrections as a script for the school system's database (SPEC §11).
    await uploads.register(correcoesRoutes);
    // The caller's season from the ledger (SPEC §13): school names and counts, never a person.
    await uploads.register(safrasRoutes);
  });

  await app.register(async (queries) => {
    queries.addHook('onRequest', requireCredential(config.queryApiKeys, staff && { sessions: staff, permission: 'consulta' }));
    await queries.register(queryRoutes, { service: query });
  });

  await app.register(bullBoardPlugin, { config, runner, logger: deps.logger });
  await app.register(pagePlugin, { consultas: query !== null });

  app.addHook('onClose', async () => {
    await Promise.all([runner.close(), query?.close()]);
  });
  return app;
}
