// GET /api/lotes/{id}/cartas?format=xlsx|html (issue 56): a letter per school of the batch — what
// it must do about its divergences and where, and for the Receita Federal's cases a notice for the
// family — as a workbook or a printable page. Read as /resumo reads the batch (same owner rule, the
// same 409 before `concluido` unless `?parcial=true`); the letters are the core's
// (shared/src/core/output/cartas.ts), which `censo cartas` shares, so both give the same letters.
import { mib, Orcamento, pesar, type Limite, type Peso } from './orcamento.js';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import {
  BadInputError,
  CARTAS_FORMATS,
  CensoError,
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
import { loteDivergencias, loteParaResposta, parcialOf } from './results.js';
import { idParam, readErrors } from './schemas.js';

export const FORMAT_CARTAS_ERROR = 'Parâmetro format deve ser xlsx ou html.';

/**
 * The most divergences one batch's letters may come from, and all of this process's letters at
 * once: a school's divergences may come from files apart in the batch, so the letters hold the
 * batch's divergences that need action until they are written (as a comparison holds its rounds,
 * about 1 KiB each at most). One batch beyond it is refused (422); one that would take the process
 * beyond it while others are written waits for them (503 with Retry-After).
 */
export const CARTAS_MAX_DIVERGENCIAS = 400_000;

/** The same in the bytes of the batch's stored results, as the comparison's (issue 59: a few fat divergences). */
export const CARTAS_MAX_BYTES = 160 * 1024 * 1024;

/** The bounds in force: the constants above, lowered only by tests. */
export const cartasLimite: Limite = { divergencias: CARTAS_MAX_DIVERGENCIAS, bytes: CARTAS_MAX_BYTES };

/** 422: a batch with more divergences than CARTAS_MAX_DIVERGENCIAS (docs/integracao.md). */
export class CartasGrandesError extends CensoError {
  readonly status = 422;
  readonly code = 'CARTAS_GRANDES';
  constructor(divergencias: number, bytes: number) {
    super(
      bytes > cartasLimite.bytes
        ? `Lote grande demais para as cartas: ${mib(bytes)} MiB de resultados, o limite é ${mib(cartasLimite.bytes)} MiB. ` +
            'Use lotes menores ou o censo cartas.'
        : `Lote grande demais para as cartas: ${divergencias} divergências, o limite é ${cartasLimite.divergencias}. ` +
            'Use lotes menores ou o censo cartas.',
    );
  }
}

/** 503: the process is writing as many letters as it may at once (Retry-After added by the error handler). */
export class CartasOcupadasError extends CensoError {
  readonly status = 503;
  readonly code = 'CARTAS_OCUPADAS';
  constructor() {
    super('Cartas demais em andamento, tente novamente em instantes.');
  }
}

const cartasDoProcesso = new Orcamento(
  cartasLimite,
  (divergencias, bytes) => new CartasGrandesError(divergencias, bytes),
  () => new CartasOcupadasError(),
);

/** How many divergences this process's letters hold now (tests: it returns to 0 after each answer). */
export const cartasEmAndamento = (): number => cartasDoProcesso.emAndamento().divergencias;

/** The divergences and result bytes of the batch's concluded files, from their tasks' records: before any is read. */
async function pesoDoLote(service: TarefasService, loteId: string): Promise<Peso> {
  const peso: Peso = { divergencias: 0, bytes: 0 };
  for await (const record of service.listagens.loteTarefas(loteId)) {
    if (record.rota === 'divergencias-rf' && record.estado === 'concluida') pesar(peso, record);
  }
  return peso;
}

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
      422: `\`Lote grande demais para as cartas: …\`: mais de ${CARTAS_MAX_DIVERGENCIAS} divergências no lote.`,
      503: '`Cartas demais em andamento, tente novamente em instantes.` (com Retry-After).',
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
      await loteParaResposta(service, request, reply, id, parcialOf(request.query));
      // Counted from the tasks' records before a divergence is read: refused or held off at no cost.
      const release = cartasDoProcesso.admitir(await pesoDoLote(service, id));
      let body: Readable;
      try {
        body = Readable.from(cartasChunks(await cartasOf(service, storage, id), format), { objectMode: false });
      } catch (err) {
        release();
        throw err;
      }
      // Held until the answer is sent, failed or the client left ('close' comes in every case).
      body.once('close', release);
      reply.type(CARTAS_TYPES[format]).header('content-disposition', attachment(`cartas-lote-${id}.${format}`));
      if (format === 'html') reply.header('content-security-policy', CARTAS_CSP).header('x-content-type-options', 'nosniff');
      return reply.send(body);
    },
  );
}
