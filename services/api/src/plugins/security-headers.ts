// Headers every answer of the service carries, whatever route, format or error produced it.
// Issue 50: `/api/*` answered without `X-Content-Type-Options: nosniff`, so a browser that sniffs
// could take a CSV or JSON answer, whose cells are the client's own text (a file name, a
// `referencia`), for HTML. The page's own headers (CSP, no referrer) stay with the page
// (page.ts); this is the part that applies to everything.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff' } as const;

async function securityHeaders(app: FastifyInstance): Promise<void> {
  // On the Node response before Fastify sees the request: the answers Fastify writes before any
  // hook runs (a path that does not decode, app.ts's frameworkErrors) carry them too; the
  // headers a reply then writes are merged with these.
  app.server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
  });
  // And through Fastify, for every answer that does not pass through that server (app.inject).
  app.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });
}

/** On the root instance (not encapsulated), so every route and every error gets them. */
export const securityHeadersPlugin = fp(securityHeaders, { name: 'censo-security-headers', fastify: '5.x' });
