// GET /api/lotes/{id}/correcoes?formato=ieducar[&parte=previa|correcao] (issues 46, 56, 59): one of
// the two i-Educar files for every divergence of the batch's concluded divergencias-rf tasks, read as
// GET /api/lotes/{id}/divergencias reads them (same owner rule, same 409 before `concluido`). The
// script reads the batch's results twice and writes each divergence as it reads it, so one call holds
// a divergence at a time whatever the batch's size (issue 59); at most SCRIPTS_AO_MESMO_TEMPO calls
// run at once per process (503 beyond). Registered inside the /api/* scope that authenticates and
// sets `Cache-Control: no-store`; it sets that header itself as well, since a script full of CPFs
// must never be cached whoever registers it.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import {
  BadInputError,
  CensoError,
  IEDUCAR_PARTES,
  ieducarFileName,
  ieducarScript,
  type IeducarDivergencia,
  type IeducarParte,
} from '@censo/shared';
import { annotateRequestLog } from '../http/request-annotations.js';
import { attachment } from '../http/content-disposition.js';
import { loteNaoEncontrado } from '../tarefas/errors.js';
import { isId } from '../tarefas/model.js';
import { loteDivergencias, loteParaResposta, parcialOf } from './tarefas/results.js';
import { apiKeySecurity, authErrors, errorResponses } from './schemas.js';

export const FORMATO_CORRECOES_ERROR = 'Parâmetro formato deve ser ieducar.';
export const PARTE_CORRECOES_ERROR = 'Parâmetro parte deve ser previa ou correcao.';

/**
 * Scripts this process writes at once. Each holds one divergence at a time (a few hundred KiB at
 * the fattest), so the bound is about the batch results read from storage in parallel, not memory.
 */
export const SCRIPTS_AO_MESMO_TEMPO = 4;

/** The bound in force: SCRIPTS_AO_MESMO_TEMPO, lowered only by tests (holding four answers open takes scripts larger than the sockets' buffers). */
export const scriptsLimite = { aoMesmoTempo: SCRIPTS_AO_MESMO_TEMPO };
let emAndamento = 0;

/** How many scripts this process is writing now (tests: it returns to 0 after each answer). */
export const scriptsEmAndamento = (): number => emAndamento;

/** 503: the process writes as many scripts as it may at once (Retry-After added by the error handler). */
export class ScriptsOcupadosError extends CensoError {
  readonly status = 503;
  readonly code = 'SCRIPTS_OCUPADOS';
  constructor() {
    super('Scripts do i-Educar demais em andamento, tente novamente em instantes.');
  }
}

/** Who the changes are on record as in i-Educar's audit (`ieducar_audit.context.user_name`). */
const AUDIT_USER = 'censo-api';

/** OpenAPI description only: the handler checks the parameters, with the messages above. */
const correcoesSchema = {
  tags: ['lotes'],
  summary: 'Scripts SQL (prévia e correção) que corrigem no i-Educar as divergências que o arquivo corrigido corrige',
  description:
    'Para as divergências das tarefas divergencias-rf concluídas do lote com `correcao` = `arquivo` (nome, data de nascimento, CPF, INEP): ' +
    '`parte=previa` (padrão) é um SELECT só de leitura; `parte=correcao`, numa transação com o contexto de auditoria do i-Educar, as atualizações, ' +
    'só onde o cadastro ainda tem o valor enviado. As demais são listadas num comentário, com quem corrige. ' +
    `No máximo ${SCRIPTS_AO_MESMO_TEMPO} scripts ao mesmo tempo por processo (503 com Retry-After). Veja docs/ieducar.md.`,
  security: apiKeySecurity,
  params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
  querystring: {
    type: 'object',
    required: ['formato'],
    properties: {
      formato: { type: 'string', enum: ['ieducar'] },
      parte: { type: 'string', enum: [...IEDUCAR_PARTES], default: 'previa', description: '`previa` (só leitura) ou `correcao` (grava).' },
      parcial: { type: 'string', enum: ['true', 'false'], default: 'false', description: '`true`: antes de o lote estar concluido.' },
    },
  },
  response: {
    200: {
      description: 'O script: `ieducar-lote-<id>-previa.sql` ou `ieducar-lote-<id>-correcao.sql`.',
      content: { 'application/sql': { schema: { type: 'string' } } },
    },
    ...errorResponses({
      ...authErrors,
      400: `\`${FORMATO_CORRECOES_ERROR}\`, \`${PARTE_CORRECOES_ERROR}\` ou \`parcial\` inválido.`,
      404: 'Id desconhecido, apagado ou expirado: `Lote não encontrado.`',
      409: '`Lote ainda não concluído.` (com Retry-After), antes de o lote estar concluido e sem `parcial=true`.',
      503: '`Scripts do i-Educar demais em andamento, tente novamente em instantes.` (com Retry-After).',
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
      const parte = (query.parte ?? 'previa') as IeducarParte;
      if (!IEDUCAR_PARTES.includes(parte)) throw new BadInputError(PARTE_CORRECOES_ERROR);
      await loteParaResposta(service, request, reply, id, parcialOf(query));
      if (emAndamento >= scriptsLimite.aoMesmoTempo) throw new ScriptsOcupadosError();
      // Each item is a stored divergence with the batch's `referencia` and `arquivo` in front; read anew on each pass.
      const divergencias = () =>
        loteDivergencias(service, storage, id) as AsyncIterable<Record<string, unknown>> as AsyncIterable<IeducarDivergencia>;
      const body = Readable.from(ieducarScript(parte, divergencias, { userName: AUDIT_USER, origin: `censo-api lote ${id}`, lote: id }));
      emAndamento++;
      // 'close' comes once the body ended, failed or the client left, whether or not it was read.
      body.once('close', () => emAndamento--);
      return reply
        .type('application/sql; charset=utf-8')
        .header('content-disposition', attachment(ieducarFileName(parte, { lote: id })))
        .header('cache-control', 'no-store')
        .send(body);
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
