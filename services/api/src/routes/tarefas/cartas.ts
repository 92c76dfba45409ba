// GET /api/lotes/{id}/cartas?format=xlsx|html (issue 56): a letter per school of the batch — what
// it must do about its divergences and where, and for the Receita Federal's cases a notice for the
// family — as a workbook or a printable page. Read as /resumo reads the batch (same owner rule, the
// same 409 before `concluido` unless `?parcial=true`); the letters are the core's
// (shared/src/core/output/cartas.ts), which `censo cartas` shares, so both give the same letters.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import {
  BadInputError,
  CARTAS_FORMATS,
  CARTAS_STYLE,
  Cartas,
  cartasChunks,
  type CartasFormat,
  type Chave,
  type Correcao,
  type Storage,
} from '@censo/shared';
import { annotateRequestLog } from '../../http/request-annotations.js';
import { attachment } from '../../http/content-disposition.js';
import { CONTENT_TYPES } from '../../http/retorno-answers.js';
import { loteNaoEncontrado } from '../../tarefas/errors.js';
import { isId } from '../../tarefas/model.js';
import type { TarefasService } from '../../tarefas/service.js';
import { apiKeySecurity, errorResponses } from '../schemas.js';
import { donoOfRequest } from './dono.js';
import { answerOnlyWhole, loteDivergencias, parcialOf } from './results.js';
import { idParam, readErrors } from './schemas.js';

export const FORMAT_CARTAS_ERROR = 'Parâmetro format deve ser xlsx ou html.';

const CARTAS_TYPES: Readonly<Record<CartasFormat, string>> = { xlsx: CONTENT_TYPES.xlsx, html: 'text/html; charset=utf-8' };

/**
 * The page is a download, but a browser may open it: it may show its own inline style (named by
 * its hash) and nothing else — no script, no image, no request anywhere — and runs sandboxed.
 */
export const CARTAS_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(CARTAS_STYLE).digest('base64')}'`,
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  'sandbox',
].join('; ');

/** OpenAPI description only: the handler checks the parameters, with the messages above and /resumo's. */
const loteCartasSchema = {
  tags: ['lotes'],
  summary: 'Uma carta por escola: o que cada escola deve corrigir e onde (planilha ou página para imprimir)',
  description:
    'Para cada escola (`referencia`) com arquivo lido no lote: as divergências contadas por `correcao` e uma frase (por exemplo ' +
    '"3 no formulário do Educacenso, 2 para o cidadão na Receita Federal; 4 só de grafia, nada a fazer"), e as pessoas ' +
    '(código na escola, linha) com o dado, o valor enviado, o da Receita Federal, Como corrigir e O que fazer. ' +
    '`format=xlsx` (padrão): planilha `escolas` (uma linha por escola, contagens como números, e a frase) e planilha `pessoas` ' +
    '(uma linha por divergência que pede ação; as de `grafia` ficam de fora). `format=html`: uma página para imprimir, uma escola ' +
    'por página, com um aviso para entregar à família de cada pessoa cujo cadastro do CPF precisa ser atualizado na Receita Federal. ' +
    '409 até o lote estar concluido, a menos que `parcial=true` (como `/resumo`).',
  security: apiKeySecurity,
  params: idParam,
  querystring: {
    type: 'object',
    properties: {
      format: { type: 'string', enum: [...CARTAS_FORMATS], default: 'xlsx' },
      parcial: {
        type: 'string',
        enum: ['true', 'false'],
        default: 'false',
        description: '`true`: responde antes de o lote estar concluido, com o que já terminou (e `Lote-Estado`).',
      },
    },
  },
  response: {
    200: {
      description: 'As cartas, para baixar: `cartas-lote-<id>.xlsx` ou `cartas-lote-<id>.html`.',
      headers: {
        'lote-tarefas-concluidas': { type: 'integer', description: 'Tarefas divergencias-rf concluídas do lote.' },
        'lote-tarefas-falhas': { type: 'integer', description: 'Tarefas divergencias-rf do lote que falharam.' },
        'lote-estado': { type: 'string', description: 'Com `parcial=true`: o estado do lote quando a resposta começou.' },
      },
      content: {
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { schema: { type: 'string', format: 'binary' } },
        'text/html': { schema: { type: 'string' } },
      },
    },
    ...errorResponses({
      400: `\`${FORMAT_CARTAS_ERROR}\` ou \`parcial\` inválido.`,
      404: 'Id desconhecido, apagado ou expirado: `Lote não encontrado.`',
      409: '`Lote ainda não concluído.` (com Retry-After), antes de o lote estar concluido e sem `parcial=true`.',
    }),
    ...readErrors,
  },
} as const;

/** The letters of the batch: each school whose file was read (in file order), with its divergences. */
async function cartasOf(service: TarefasService, storage: Storage, loteId: string): Promise<Cartas> {
  const cartas = new Cartas();
  for await (const item of loteDivergencias(service, storage, loteId, (record) => {
    if (record.rota === 'divergencias-rf' && record.estado === 'concluida') cartas.escola(record.referencia ?? '');
  })) {
    const text = (field: string) => String(item[field] ?? '');
    cartas.divergencia({
      referencia: text('referencia'),
      codigo_na_escola: text('codigo_na_escola'),
      linha: text('linha'),
      campo: text('campo'),
      enviado: text('enviado'),
      correto: text('correto'),
      chave: (item.chave as Chave | null | undefined) ?? null,
      correcao: (item.correcao as Correcao | null | undefined) ?? null,
    });
  }
  return cartas;
}

function formatOf(query: unknown): CartasFormat {
  const format = (query as Record<string, unknown> | undefined)?.format ?? 'xlsx';
  if (!(CARTAS_FORMATS as readonly unknown[]).includes(format)) throw new BadInputError(FORMAT_CARTAS_ERROR);
  return format as CartasFormat;
}

/** Registers GET /api/lotes/{id}/cartas on the batches' routes. */
export function cartasRoute(app: FastifyInstance): void {
  const { service, storage } = app.tarefas;
  app.get<{ Params: { id: string } }>(
    '/api/lotes/:id/cartas',
    { schema: loteCartasSchema, validatorCompiler: () => () => true },
    async (request, reply) => {
      const { id } = request.params;
      if (!isId(id)) throw loteNaoEncontrado();
      annotateRequestLog(request, { lote: id });
      const format = formatOf(request.query);
      const parcial = parcialOf(request.query);
      const lote = await service.lote(id, donoOfRequest(request));
      if (lote === null) throw loteNaoEncontrado();
      await answerOnlyWhole(service, reply, lote, parcial);
      const cartas = await cartasOf(service, storage, id);
      reply.type(CARTAS_TYPES[format]).header('content-disposition', attachment(`cartas-lote-${id}.${format}`));
      if (format === 'html') reply.header('content-security-policy', CARTAS_CSP).header('x-content-type-options', 'nosniff');
      return reply.send(Readable.from(cartasChunks(cartas, format), { objectMode: false }));
    },
  );
}
