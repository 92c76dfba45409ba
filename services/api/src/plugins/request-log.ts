// One log line per request (instead of Fastify's two), carrying what an operator needs to find
// a failed request: id, route, status, duration and, for uploads, the job id and counts. Keys,
// names and CPFs never appear: only ids and numbers are attached.
import type { FastifyInstance, FastifyRequest } from 'fastify';

export interface RequestLogFields {
  jobId?: string;
  kind?: string;
  count?: number;
  code?: string;
  rows?: number;
  /** How the upload's job ended and how long the request waited for it (metrics.ts). */
  outcome?: 'ok' | 'rejected' | 'timeout' | 'cancelled' | 'error';
  jobMs?: number;
  /** Bytes of each uploaded file written to disk, even when the upload was then refused. */
  bytes?: Partial<Record<'retorno' | 'txt', number>>;
  /** The declared query that ran and its format (GET /api/query); `rows` is its row count. */
  query?: string;
  format?: 'json' | 'csv';
}

declare module 'fastify' {
  interface FastifyRequest {
    logFields: RequestLogFields | null;
  }
}

export function annotateRequestLog(request: FastifyRequest, fields: RequestLogFields): void {
  request.logFields = { ...request.logFields, ...fields };
}

export function registerRequestLog(app: FastifyInstance): void {
  app.decorateRequest('logFields', null);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      status,
      ms: Math.round(reply.elapsedTime),
      ...request.logFields,
    };
    if (status >= 500) request.log.error(line, 'request completed');
    else request.log.info(line, 'request completed');
  });
}
