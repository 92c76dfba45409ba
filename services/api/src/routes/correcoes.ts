// GET /api/lotes/{id}/correcoes?formato=ieducar (issue 46): the i-Educar script for every
// divergence of the batch's concluded divergencias-rf tasks, read as GET /api/lotes/{id}/divergencias
// reads them (same owner rule, same 409 before `concluido`), streamed as it is written. Registered
// inside the /api/* scope that authenticates and sets `Cache-Control: no-store`; it sets that
// header itself as well, since a script full of CPFs must never be cached whoever registers it.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { BadInputError, ieducarScript, type IeducarDivergencia } from '@censo/shared';
import { annotateRequestLog } from '../http/request-annotations.js';
import { attachment } from '../http/content-disposition.js';
import { loteNaoEncontrado } from '../tarefas/errors.js';
import { donoOfRequest } from './tarefas/dono.js';
import { isId } from '../tarefas/model.js';
import { answerOnlyWhole, loteDivergencias, parcialOf } from './tarefas/results.js';
import { apiKeySecurity, authErrors, errorResponses } from './schemas.js';

export const FORMATO_CORRECOES_ERROR = 'Parâmetro formato deve ser ieducar.';

/** Who the changes are on record as in i-Educar's audit (`ieducar_audit.context.user_name`). */
const AUDIT_USER = 'censo-api';

/** OpenAPI description only: the handler checks the parameters, with the messages above. */
const correcoesSchema = {
  tags: ['lotes'],
  summary: 'Script SQL que corrige no i-Educar as divergências que o arquivo corrigido corrige',
  description:
    'Para as divergências das tarefas divergencias-rf concluídas do lote com `correcao` = `arquivo` (nome, data de nascimento, CPF, INEP): ' +
    'uma prévia só de leitura e, numa transação com o contexto de auditoria do i-Educar, as atualizações, só onde o cadastro ainda tem o valor enviado. ' +
    'As demais são listadas num comentário, com quem corrige. Veja docs/ieducar.md.',
  security: apiKeySecurity,
  params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
  querystring: {
    type: 'object',
    required: ['formato'],
    properties: {
      formato: { type: 'string', enum: ['ieducar'] },
      parcial: { type: 'string', enum: ['true', 'false'], default: 'false', description: '`true`: antes de o lote estar concluido.' },
    },
  },
  response: {
    200: {
      description: 'O script (psql -v ON_ERROR_STOP=1 -f correcoes-ieducar.sql).',
      content: { 'application/sql': { schema: { type: 'string' } } },
    },
    ...errorResponses({
      ...authErrors,
      400: `\`${FORMATO_CORRECOES_ERROR}\` ou \`parcial\` inválido.`,
      404: 'Id desconhecido, apagado ou expirado: `Lote não encontrado.`',
      409: '`Lote ainda não concluído.` (com Retry-After), antes de o lote estar concluido e sem `parcial=true`.',
    }),
  },
} as const;

async function routes(app: FastifyInstance): Promise<void> {
  const { service, storage } = app.tarefas;

  app.get<{ Params: { id: string } }>(
    '/api/lotes/:id/correcoes',
    { schema: correcoesSchema, validatorCompiler: () => () => true },
    async (request, reply) => {
      const { id } = request.params;
      if (!isId(id)) throw loteNaoEncontrado();
      annotateRequestLog(request, { lote: id });
      const query = request.query as Record<string, unknown>;
      if (query.formato !== 'ieducar') throw new BadInputError(FORMATO_CORRECOES_ERROR);
      const parcial = parcialOf(query);
      const lote = await service.lote(id, donoOfRequest(request));
      if (lote === null) throw loteNaoEncontrado();
      await answerOnlyWhole(service, reply, lote, parcial);
      // Each item is a stored divergence with the batch's `referencia` and `arquivo` in front.
      const divergencias = loteDivergencias(service, storage, id) as AsyncIterable<
        Record<string, unknown>
      > as AsyncIterable<IeducarDivergencia>;
      return reply
        .type('application/sql; charset=utf-8')
        .header('content-disposition', attachment('correcoes-ieducar.sql'))
        .header('cache-control', 'no-store')
        .send(Readable.from(ieducarScript(divergencias, { userName: AUDIT_USER, origin: `censo-api /api/lotes/${id}/correcoes` })));
    },
  );
}

export const correcoesRoutes = fp(routes, {
  name: 'censo-correcoes-routes',
  fastify: '5.x',
  encapsulate: true,
  dependencies: ['censo-tarefas'],
  decorators: { fastify: ['tarefas'] },
});
