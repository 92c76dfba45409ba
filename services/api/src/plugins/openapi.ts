// OpenAPI 3.1 document (`GET /docs/json`) and its UI (`GET /docs`), both without auth (SPEC §6).
// The document is generated from the routes' own schemas, the ones Fastify validates and
// serialises with, so docs and behaviour have one source. Must be registered before any route:
// @fastify/swagger collects routes in an onRoute hook.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { quieterLevel } from './metrics.js';

export const DOCS_PREFIX = '/docs';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const file = (description: string) => ({ type: 'string', format: 'binary', description }) as const;

/**
 * The upload routes read their multipart body by hand (streamed to disk, SPEC §5 limits enforced
 * while streaming), so the body is described here for the document only: a `body` in the route
 * schema would make Fastify validate it, and there is nothing parsed to validate.
 */
const RETORNO_AND_TXT = {
  type: 'object',
  required: ['retorno', 'txt'],
  properties: {
    retorno: file('Retorno do Censo, .json ou .xlsx (até 25 MB).'),
    txt: file('Arquivo de migração enviado ao Censo, .txt (até 25 MB).'),
  },
} as const;

const MULTIPART_BODIES: Readonly<Record<string, object>> = {
  '/api/divergencias-rf': {
    type: 'object',
    required: ['retorno'],
    properties: { retorno: file('Retorno do Censo, .json ou .xlsx (até 25 MB).') },
  },
  '/api/retorno-rf': RETORNO_AND_TXT,
  '/api/censo-corrigido': RETORNO_AND_TXT,
};

/** Operator-only or self-describing routes that are not part of the API contract. */
const HIDDEN_PREFIXES = ['/admin', DOCS_PREFIX];

const transform: NonNullable<FastifyDynamicSwaggerOptions['transform']> = ({ schema, url }) => {
  const hidden = HIDDEN_PREFIXES.some((prefix) => url === prefix || url.startsWith(`${prefix}/`));
  if (hidden) return { schema: { ...schema, hide: true }, url };
  const body = MULTIPART_BODIES[url];
  if (body) return { schema: { ...schema, body, consumes: ['multipart/form-data'] } as typeof schema, url };
  return { schema, url };
};

async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      // 3.1: the schemas use JSON Schema type arrays (`["string", "null"]`).
      openapi: '3.1.0',
      info: {
        title: 'censo-api',
        version,
        description:
          'Divergências do retorno do Censo Escolar com a Receita Federal e consultas de leitura. ' +
          'Rotas /api/* exigem o header `x-api-key`; erros respondem `{"erro": "<mensagem>"}`.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (somente GET /metrics).' },
        },
      },
      tags: [
        { name: 'retorno', description: 'Retorno do Censo × Receita Federal (upload multipart).' },
        { name: 'consulta', description: 'Consultas nomeadas de leitura no PostgreSQL.' },
        { name: 'operação', description: 'Saúde, prontidão e métricas, para orquestradores e monitoramento.' },
      ],
    },
    // Shared schemas keep their $id as their name in components.schemas (`Erro`, not `def-0`).
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform,
  });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    logLevel: quieterLevel(app, 'warn'),
    uiConfig: { docExpansion: 'list', deepLinking: false },
  });
}

/** Register before any route: @fastify/swagger collects routes as they are added. */
export const openApiPlugin = fp(openApi, { name: 'censo-openapi', fastify: '5.x' });
