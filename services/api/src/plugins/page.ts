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

export interface PageOptions {
  /** Whether the named queries are configured (DATABASE_URL): the page shows its Consultas tab only then. */
  readonly consultas: boolean;
}

export async function pagePlugin(app: FastifyInstance, { consultas }: PageOptions): Promise<void> {
  await app.register(helmet, PAGE_HEADERS);
  // What this service offers the page, asked once on load: no key, nothing personal, and never a
  // request the page knows would fail (the query list answers 503 without a database, SPEC §3.3).
  app.get('/pagina.json', { schema: { hide: true } }, async () => ({ consultas }));
  // One route per file (no wildcard), so the page can never shadow /api, /docs or the probes.
  await app.register(fastifyStatic, { root: WEB_DIR, prefix: '/', index: 'index.html', wildcard: false });
}
