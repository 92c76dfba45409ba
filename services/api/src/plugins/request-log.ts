// One log line per request (instead of Fastify's two), carrying what an operator needs to find
// a failed request: id, route, status, duration and, for uploads, the job id and counts. Keys,
// names and CPFs never appear: only ids and numbers are attached.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** A gateway's request id short and plain enough to echo and log as it is. */
const PLAIN_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's id (Fastify's genReqId): its `x-request-id` when a gateway set a short, plain one,
 * else a new UUID. Any other value (8 kB, a name, a line of HTML) is neither echoed nor logged.
 */
export function requestId(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && PLAIN_REQUEST_ID.test(given) ? given : randomUUID();
}

/** nginx's "client closed request": the client left before the response was complete. */
export const CLIENT_CLOSED_REQUEST = 499;

/** Called once per request when its response is over, finished or abandoned. */
export type RequestEndListener = (request: FastifyRequest, reply: FastifyReply, status: number) => void;

declare module 'fastify' {
  interface FastifyInstance {
    onRequestEnd(listener: RequestEndListener): void;
  }
}

/**
 * Fastify's onResponse only fires for responses that finish; a client that leaves mid-upload or
 * while its job runs would get no log line and no metrics. The raw response's 'close' fires in
 * both cases, so the request log and the metrics hang off that instead.
 */
async function requestLog(app: FastifyInstance): Promise<void> {
  const listeners: RequestEndListener[] = [];
  app.decorate('onRequestEnd', (listener: RequestEndListener) => void listeners.push(listener));
  app.decorateRequest('logFields', null);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.raw.once('close', () => {
      const status = reply.raw.writableFinished ? reply.statusCode : CLIENT_CLOSED_REQUEST;
      // Deferred a turn: an abandoned upload's job is cancelled by this same 'close', and its
      // outcome reaches logFields in the microtasks that follow.
      setImmediate(() => {
        for (const listener of listeners) {
          // Past the response, a listener's failure (a log, a metric) must not end the process.
          try {
            listener(request, reply, status);
          } catch (err) {
            request.log.error({ err }, 'request end listener failed');
          }
        }
      });
    });
  });
  app.onRequestEnd((request, reply, status) => {
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

/** Decorates `onRequestEnd` and `request.logFields` for every later plugin and route. */
export const requestLogPlugin = fp(requestLog, { name: 'censo-request-log', fastify: '5.x' });
