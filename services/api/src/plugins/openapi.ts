// OpenAPI 3.1 document (`GET /docs/json`) and its UI (`GET /docs`), both without auth (SPEC §6).
// The document is generated from the routes' own schemas, the ones Fastify validates and
// serialises with, so docs and behaviour have one source. Must be registered before any route:
// @fastify/swagger collects routes in an onRoute hook.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import helmet from '@fastify/helmet';
import { quieterLevel } from './metrics.js';
import { PAGE_HEADERS } from './page.js';

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

const MULTIPART_BODIES: Record<string, object> = {
  '/api/divergencias-rf': {
    type: 'object',
    required: ['retorno'],
    properties: { retorno: file('Retorno do Censo, .json ou .xlsx (até 25 MB).') },
  },
  '/api/retorno-rf': RETORNO_AND_TXT,
  '/api/censo-corrigido': RETORNO_AND_TXT,
};

/** A batch's upload routes (SPEC §7.3): the same files plus an optional text field. */
const REFERENCIA = {
  type: 'string',
  maxLength: 255,
  description: 'Opcional: a referência da tarefa no lote (ex.: o código INEP da escola).',
};
for (const rota of ['divergencias-rf', 'retorno-rf', 'censo-corrigido']) {
  const body = MULTIPART_BODIES[`/api/${rota}`] as { properties: object };
  MULTIPART_BODIES[`/api/lotes/:id/${rota}`] = { ...body, properties: { ...body.properties, referencia: REFERENCIA } };
}

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
          sessao: {
            type: 'apiKey',
            in: 'cookie',
            name: 'censo-sessao',
            description:
              'Com OIDC_ISSUER: a sessão de um servidor que entrou em /auth/login (`__Host-censo-sessao` com PUBLIC_URL https), sem x-api-key; POST e DELETE levam também o x-csrf-token de GET /auth/sessao.',
          },
          metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (somente GET /metrics).' },
        },
      },
      tags: [
        { name: 'retorno', description: 'Retorno do Censo × Receita Federal (upload multipart).' },
        { name: 'consulta', description: 'Consultas nomeadas de leitura no PostgreSQL.' },
        {
          name: 'tarefas',
          description: 'Tarefas assíncronas: um upload com `Prefer: respond-async` responde 202 e o resultado é lido depois (SPEC §7.1).',
        },
        {
          name: 'lotes',
          description: 'Lotes: muitos arquivos de uma vez, com contagens, divergências reunidas e webhook (SPEC §7.3, §7.4).',
        },
        {
          name: 'safras',
          description:
            'A safra do censo: as rodadas (lotes) de um ano e cada escola ao longo delas, lidas do registro da safra (SPEC §13).',
        },
        { name: 'operação', description: 'Saúde, prontidão e métricas, para orquestradores e monitoramento.' },
      ],
    },
    // Shared schemas keep their $id as their name in components.schemas (`Erro`, not `def-0`).
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform,
  });
  // The UI under the staff page's headers, in a scope of its own so they reach no other route:
  // no site may frame it, and it runs only the service's own files. Swagger UI's page has no
  // inline script, and React sets styles through the DOM, which style-src does not govern; the
  // one inline <style> is inside the top bar's logo, so the UI goes without the top bar
  // (BaseLayout: the document URL is fixed anyway) rather than loosening style-src.
  await app.register(async (docs) => {
    await docs.register(helmet, PAGE_HEADERS);
    await docs.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      logLevel: quieterLevel(app, 'warn'),
      // No validator badge either: it would load an image from validator.swagger.io.
      uiConfig: { docExpansion: 'list', deepLinking: false, layout: 'BaseLayout', validatorUrl: null },
    });
  });
}

/** Register before any route: @fastify/swagger collects routes as they are added. */
export const openApiPlugin = fp(openApi, { name: 'censo-openapi', fastify: '5.x' });
