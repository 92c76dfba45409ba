// GET /api/query (SPEC §3.3): the declared read-only queries, a JSON page at a time or all rows
// as CSV. Authentication is not here: the app registers this plugin in a context whose onRequest
// hook checks x-api-key (SPEC §4), so a 401/503 from it comes before anything below.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QueryNotConfiguredError } from '@censo/shared';
import type { QueryService } from '../query/service.js';
import { MAX_PAGE_SIZE } from '../query/params.js';
import { apiKeySecurity, errorResponses } from './schemas.js';
import { annotateRequestLog } from '../http/request-annotations.js';

export interface QueryRoutesOptions {
  /** null when DATABASE_URL is unset: every request answers 503 (SPEC §3.3). */
  readonly service: QueryService | null;
}

const JSON_TYPE = 'application/json; charset=utf-8';

const cell = { type: ['string', 'null'] } as const;

const pageSchema = {
  type: 'object',
  description:
    'Uma página (format=json). `rows`: um objeto por linha, com as chaves de `columns`, na mesma ordem; todo valor não nulo é texto.',
  required: ['query', 'count', 'next_cursor', 'columns', 'rows'],
  properties: {
    query: { type: 'string' },
    count: { type: 'integer', description: 'Linhas nesta página.' },
    next_cursor: { type: ['string', 'null'], description: 'Passe em `cursor` para a próxima página; null na última.' },
    columns: { type: 'array', items: { type: 'string' } },
    rows: { type: 'array', items: { type: 'object', additionalProperties: cell } },
  },
} as const;

const listingSchema = {
  type: 'object',
  description: 'Sem parâmetros: as consultas disponíveis e seus filtros.',
  required: ['queries'],
  properties: {
    queries: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          description: { type: 'string' },
          titulo: { type: 'string', description: 'O nome da consulta para a equipe (o que a página mostra).' },
          descricao: { type: 'string', description: 'O que a consulta lista, para a equipe.' },
          columns: { type: 'array', items: { type: 'string' } },
          filters: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                name: { type: 'string' },
                type: { type: 'string', enum: ['integer', 'text', 'date'] },
                required: { type: 'boolean' },
                description: { type: 'string' },
                titulo: { type: 'string', description: 'O rótulo do filtro na página.' },
                descricao: { type: 'string', description: 'O que digitar e o que o filtro seleciona.' },
              },
            },
          },
        },
      },
    },
  },
} as const;

export async function queryRoutes(app: FastifyInstance, opts: QueryRoutesOptions): Promise<void> {
  const { service } = opts;

  // Filters are declared in data, so the query string is validated by hand (params.ts) with our
  // own 400 messages. The schema below only documents it: properties without a type validate
  // nothing, and the handler sends serialised strings, so the response schemas are documentation.
  const filterDocs: Record<string, { description: string }> = {};
  for (const query of service?.catalog.values() ?? []) {
    for (const filter of query.filters) {
      const text =
        `Filtro de \`${query.name}\` (${filter.type}${filter.required ? ', obrigatório' : ''}). ${filter.description ?? ''}`.trim();
      filterDocs[filter.name] = { description: filterDocs[filter.name] ? `${filterDocs[filter.name]!.description} ${text}` : text };
    }
  }
  // Typed as a plain object: `tags`/`summary` belong to @fastify/swagger, not to FastifySchema.
  const schema: object = {
    tags: ['consulta'],
    summary: 'Consultas nomeadas de leitura (paginadas em JSON ou CSV completo)',
    description: [
      'Sem nenhum parâmetro: lista as consultas e seus filtros.',
      `Com \`query\`: uma página de até ${MAX_PAGE_SIZE} linhas em ordem crescente da chave, e \`next_cursor\` para a seguinte.`,
      '`format=csv` devolve todas as linhas (RFC 4180, CRLF, NULL como campo vazio), sem limite de página.',
      'Parâmetro desconhecido, valor de tipo errado, data inválida, `inicio` depois de `fim`, `limit` fora de 1–1000',
      'ou `cursor` adulterado ou de outra consulta/filtros → 400.',
    ].join(' '),
    security: apiKeySecurity,
    querystring: {
      type: 'object',
      properties: {
        query: { description: 'Nome da consulta (ex.: `audits`).' },
        cursor: { description: 'O `next_cursor` da página anterior, com os mesmos filtros.' },
        limit: { description: `Linhas por página, 1–${MAX_PAGE_SIZE} (padrão ${MAX_PAGE_SIZE}); não se aplica a CSV.` },
        format: { description: '`json` (padrão) ou `csv`.' },
        ...filterDocs,
      },
    },
    response: {
      200: {
        description: 'JSON (página ou lista de consultas) ou, com format=csv, text/csv.',
        content: {
          'application/json': { schema: { anyOf: [pageSchema, listingSchema] } },
          'text/csv': { schema: { type: 'string' } },
        },
      },
      ...errorResponses({
        400: 'Parâmetro inválido (mensagem diz qual).',
        401: 'Header x-api-key ausente ou inválido.',
        403: 'Com a entrada de servidores (OIDC), sessão sem a permissão `consulta`: `Permissão insuficiente.`',
        503: '`Consulta não configurada (defina a env DATABASE_URL).`, `Banco de dados indisponível.` ou chave não configurada.',
        504: '`Tempo esgotado ao executar a consulta.` (QUERY_TIMEOUT_MS).',
      }),
    },
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (service === null) throw new QueryNotConfiguredError();
    const parsed = service.parse(request.query as Record<string, unknown>);
    // Audit data: no shared cache may keep it.
    reply.header('cache-control', 'no-store');
    if (parsed.kind === 'list') return reply.type(JSON_TYPE).send(JSON.stringify(service.describe()));
    // Bounded labels for censo_query_rows_total: a declared query name, never the raw parameter.
    annotateRequestLog(request, { query: parsed.query.name, format: parsed.format });
    if (parsed.format === 'csv') {
      const stream = await service.csv(parsed, request.log, (rows) => annotateRequestLog(request, { rows }));
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${parsed.query.name}.csv"`)
        .send(stream);
    }
    const page = await service.page(parsed);
    annotateRequestLog(request, { rows: page.count });
    return reply.type(JSON_TYPE).send(JSON.stringify(page));
  };

  app.get('/api/query', { schema }, handler);
  // SPEC §3.3 accepts a trailing slash. With ignoreTrailingSlash the router already folds it and
  // refuses the second declaration (hasRoute does not fold it, so ask by trying).
  const hidden: object = { ...schema, hide: true }; // one entry in the OpenAPI document
  try {
    app.get('/api/query/', { schema: hidden }, handler);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'FST_ERR_DUPLICATED_ROUTE') throw err;
  }
}
