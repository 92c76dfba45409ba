// Queue dashboard for operators (@bull-board) at /admin/queues. Off unless BULL_BOARD_TOKEN is
// set and jobs go through BullMQ (Redis configured); then every page, asset and API call under the
// prefix needs that token. The dashboard is a browser UI, so besides `Authorization: Bearer`
// (scripts) an operator may open `/admin/queues?token=<BULL_BOARD_TOKEN>` once: the answer sets
// an HttpOnly, SameSite=Strict cookie scoped to /admin/queues and redirects to the same page
// without the token, so it leaves the address bar and the browser history.
import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  JOB_QUEUE,
  TASK_QUEUE,
  shardPrefixes,
  bearerToken,
  closeRedisClient,
  createKeyMatcher,
  createRedisClient,
  throttledErrorLog,
  type Config,
  type Logger,
} from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';

export const BULL_BOARD_PREFIX = '/admin/queues';
export const BULL_BOARD_COOKIE = 'censo_board';
/** A dashboard session lasts a working shift; then the token is asked again. */
const COOKIE_MAX_AGE_S = 12 * 3600;
const UNAUTHORIZED = 'Credencial inválida (BULL_BOARD_TOKEN).';

export interface BullBoardOptions {
  readonly config: Pick<Config, 'bullBoardToken' | 'redis' | 'queuePrefix' | 'queueShards'>;
  readonly runner: Pick<JobRunner, 'mode'>;
  readonly logger: Logger;
}

/**
 * The cookie holds a digest of the token, not the token: a leaked cookie opens the dashboard
 * until the token is rotated, but never reveals the token itself. Rotating it ends every session.
 */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('censo-api bull-board session').digest('base64url');
}

function cookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

export function requireBoardToken(token: string) {
  const tokenMatches = createKeyMatcher([token]);
  const sessionMatches = createKeyMatcher([sessionValue(token)]);
  // bull-board installs its own error handler in its context, so the 401 is sent here rather
  // than thrown (a thrown error would reach bull-board's handler, not ours).
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as Record<string, unknown> | undefined;
    const fromQuery = typeof query?.token === 'string' ? query.token : undefined;
    if (fromQuery !== undefined && tokenMatches(fromQuery) && request.method === 'GET') {
      const secure = request.protocol === 'https' ? '; Secure' : '';
      const url = new URL(request.url, 'http://localhost');
      url.searchParams.delete('token');
      return reply
        .header(
          'set-cookie',
          `${BULL_BOARD_COOKIE}=${sessionValue(token)}; Path=${BULL_BOARD_PREFIX}; Max-Age=${COOKIE_MAX_AGE_S}; HttpOnly; SameSite=Strict${secure}`,
        )
        .header('cache-control', 'no-store')
        .redirect(`${url.pathname}${url.search}`, 303);
    }
    if (tokenMatches(bearerToken(request.headers.authorization)) || sessionMatches(cookie(request, BULL_BOARD_COOKIE))) return;
    return reply.code(401).header('www-authenticate', 'Bearer realm="censo-api queues"').send({ erro: UNAUTHORIZED });
  };
}

async function bullBoard(app: FastifyInstance, { config, runner, logger }: BullBoardOptions): Promise<void> {
  const token = config.bullBoardToken;
  if (token === null || runner.mode !== 'bullmq' || config.redis === null) return;
  // Loaded only here: bull-board, and BullMQ with it, stay out of every process that cannot show
  // the dashboard, the embedded default above all (with ioredis, which connection.ts loads the
  // same way, 9 of its 31 MiB of heap after start, marked by every full collection).
  const [{ createBullBoard }, { BullMQAdapter }, { FastifyAdapter }, { Queue }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/fastify'),
    import('bullmq'),
  ]);

  // A connection of its own: the dashboard's scans must not delay the producer's enqueues. It
  // gives up on a command quickly while Redis is away (the page shows an error), and reconnects.
  // Offline queue kept: BullMQ's Queue issues its setup commands before the connection is up.
  const connection = createRedisClient(config.redis, 'fail-fast', { enableOfflineQueue: true });
  // Every shard's two queues (QUEUE_SHARDS); a shard past the first is named `shard-<n>/<queue>` on the page.
  const shards = shardPrefixes(config.queuePrefix, config.queueShards).flatMap((prefix, shard) =>
    [JOB_QUEUE, TASK_QUEUE].map((name) => ({ queue: new Queue(name, { connection, prefix }), shard })),
  );
  const queues = shards.map(({ queue }) => queue);
  const logRedisError = throttledErrorLog(logger);
  for (const queue of queues) queue.on('error', (err) => logRedisError('bull-board queue', err));

  await app.register(async (board) => {
    board.addHook('onRequest', requireBoardToken(token));
    const serverAdapter = new FastifyAdapter().setBasePath(BULL_BOARD_PREFIX);
    createBullBoard({
      // Read-only: every job belongs to an HTTP request that waits for it (or has gone and took
      // its upload with it), so retrying, promoting or adding jobs by hand can only produce
      // results nobody receives. Finished jobs are trimmed by the retention in JOB_OPTIONS.
      queues: shards.map(
        ({ queue, shard }) => new BullMQAdapter(queue, { readOnlyMode: true, ...(shard > 0 ? { prefix: `shard-${shard}/` } : {}) }),
      ),
      serverAdapter,
      options: { uiConfig: { boardTitle: 'censo-api' } },
    });
    await board.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PREFIX });
  });
  app.addHook('onClose', async () => {
    await Promise.all(queues.map((queue) => queue.close().catch(() => undefined)));
    await closeRedisClient(connection);
  });
  logger.info({ path: BULL_BOARD_PREFIX }, 'queue dashboard enabled');
}

/** Off unless BULL_BOARD_TOKEN is set and jobs go through BullMQ. */
export const bullBoardPlugin = fp(bullBoard, { name: 'censo-bull-board', fastify: '5.x' });
