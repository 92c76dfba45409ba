// What a request's one log line carries beyond its route and status (plugins/request-log.ts writes
// it): ids and counts the handlers attach as they learn them. Below the plugins, so the domain's
// request handlers and the upload mechanics can annotate without importing a plugin.
import type { FastifyRequest } from 'fastify';

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
