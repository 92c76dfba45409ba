// The staff page (SPEC §3.6): static files from services/api/web/ at `/`, under a Content
// Security Policy of 'self' only (no inline script, no framing) and no referrer. Encapsulated,
// so these headers apply to the page's files, not to the API; the OpenAPI UI (openapi.ts)
// registers the same headers in its own scope.
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import fastifyStatic from '@fastify/static';

/** services/api/web/, seen from dist/plugins/page.js. */
export const WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

export const PAGE_CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  objectSrc: ["'none'"],
};

/** The page's security headers, for every HTML page the service serves (the page, /docs). */
export const PAGE_HEADERS: FastifyHelmetOptions = {
  // Only these directives: helmet's defaults add upgrade-insecure-requests, which would send
  // the page's own requests to https on a plain-http deployment.
  contentSecurityPolicy: { useDefaults: false, directives: PAGE_CSP },
  referrerPolicy: { policy: 'no-referrer' },
  crossOriginEmbedderPolicy: false,
};

export async function pagePlugin(app: FastifyInstance): Promise<void> {
  await app.register(helmet, PAGE_HEADERS);
  // One route per file (no wildcard), so the page can never shadow /api, /docs or the probes.
  await app.register(fastifyStatic, { root: WEB_DIR, prefix: '/', index: 'index.html', wildcard: false });
}
