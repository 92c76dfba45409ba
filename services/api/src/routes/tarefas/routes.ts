// The task and batch routes of SPEC §7 other than the uploads themselves (those are beside the
// synchronous ones, in retorno.ts): monitors, results, batch lifecycle, deletion.
// Parameters are checked here with SPEC's own messages; the route schemas document them (and
// serialise the monitors) but do not validate.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { BadInputError, JobRejectedError, traceparentNow } from '@censo/shared';
import { annotateRequestLog } from '../../http/request-annotations.js';
import { FORMAT_ERROR, requestedFormat } from '../../http/retorno-answers.js';
import {
  loteCreateSchema,
  loteDeleteSchema,
  loteDivergenciasSchema,
  loteFecharSchema,
  loteComparacaoSchema,
  loteFalhasSchema,
  loteResumoSchema,
  loteGetSchema,
  lotesListSchema,
  loteTarefasSchema,
} from './lote-schemas.js';
import { tarefaDeleteSchema, tarefaGetSchema, tarefaResultadoSchema } from './schemas.js';
import {
  ConflictError,
  IdempotencyMismatchError,
  invalido,
  loteNaoEncontrado,
  mensagens,
  TooManyLotesError,
  tarefaNaoEncontrada,
} from '../../tarefas/errors.js';
import { donoOfRequest } from './dono.js';
import { monitorOf, monitorsOf } from './intake.js';
import { ESTADOS_TAREFA, isId, loteMonitor, newId, type EstadoTarefa, type LoteRecord } from '../../tarefas/model.js';
import { sendComparacao, sendComparacaoSafra, sendResumo } from './resumo.js';
import { cartasRoute } from './cartas.js';
import { corrigidosRoute } from './corrigidos.js';
import { donoKey } from '../../tarefas/store.js';
import {
  answerOnlyWhole,
  loteParaResposta,
  parcialOf,
  RETRY_AFTER_S,
  sendLoteDivergencias,
  sendLoteFalhas,
  sendResultado,
} from './results.js';
import type { LotesCursor } from '../../tarefas/listings.js';
import { checkWebhookDestination, newWebhookSecret, parseWebhookUrl, WebhookRefused } from '../../tarefas/webhooks.js';

/** The schemas describe; the handlers check, with the SPEC's messages. */
const describeOnly = { validatorCompiler: () => () => true };

type WithId = { Params: { id: string } };

function idOf(request: FastifyRequest<WithId>, notFound: () => Error): string {
  const { id } = request.params;
  if (!isId(id)) throw notFound();
  return id;
}

/** `?format=` given explicitly, else null (the task's own). */
function explicitFormat(query: unknown) {
  if ((query as Record<string, unknown> | undefined)?.format === undefined) return null;
  const format = requestedFormat(query);
  if (format === null) throw new BadInputError(FORMAT_ERROR);
  return format;
}

/** `limit` of the listings: 1–1000, default 100 (SPEC §7.3). */
function limitOf(limit: string | undefined): number {
  if (limit !== undefined && !/^[1-9]\d{0,3}$/.test(limit)) throw invalido.limit();
  const max = limit === undefined ? 100 : Number(limit);
  if (max > 1000) throw invalido.limit();
  return max;
}

/**
 * A batch is `concluido`/`cancelado`, its tasks `concluida`/`cancelada`: a filter written with the
 * batch's spelling means the same tasks, rather than a 400 over a letter.
 */
const ESTADO_ALIASES: Readonly<Record<string, EstadoTarefa>> = { concluido: 'concluida', cancelado: 'cancelada' };

function listQuery(query: Record<string, unknown>): { estado: EstadoTarefa | null; after: number; limit: number } {
  const { cursor, limit } = query as Record<string, string | undefined>;
  const given = (query as Record<string, string | undefined>).estado;
  const estado = given === undefined ? undefined : (ESTADO_ALIASES[given] ?? given);
  if (estado !== undefined && !(ESTADOS_TAREFA as readonly string[]).includes(estado)) throw invalido.estado();
  const max = limitOf(limit);
  let after = -Infinity;
  if (cursor !== undefined) {
    const decoded = /^[A-Za-z0-9_-]{1,20}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('latin1') : '';
    if (!/^(0|[1-9]\d{0,14})$/.test(decoded)) throw invalido.cursor();
    after = Number(decoded);
  }
  return { estado: (estado as EstadoTarefa | undefined) ?? null, after, limit: max };
}

const encodeCursor = (seq: number) => Buffer.from(String(seq), 'latin1').toString('base64url');

/** GET /api/lotes's cursor: the last batch's position (minus its creation time) and id. */
const encodeLotesCursor = ({ score, id }: LotesCursor) => Buffer.from(`${score}:${id}`, 'latin1').toString('base64url');

function lotesQuery(query: Record<string, unknown>): { cursor: LotesCursor | null; limit: number } {
  const { cursor, limit } = query as Record<string, string | undefined>;
  const max = limitOf(limit);
  if (cursor === undefined) return { cursor: null, limit: max };
  const decoded = /^[A-Za-z0-9_-]{1,100}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('latin1') : '';
  const match = /^(-\d{1,15}):([0-9a-f-]{36})$/.exec(decoded);
  if (!match || !isId(match[2]!)) throw invalido.cursor();
  return { cursor: { score: Number(match[1]), id: match[2]! }, limit: max };
}

async function routes(app: FastifyInstance): Promise<void> {
  const { service, storage, config } = app.tarefas;

  const loteAnswer = async (reply: FastifyReply, lote: LoteRecord) => {
    if (lote.estado !== 'concluido') reply.header('retry-after', RETRY_AFTER_S);
    return reply.send(loteMonitor(lote, await service.listagens.processando(lote.id)));
  };

  // ------------------------------------------------------------------ tasks (SPEC §7.1)

  app.get<WithId>('/api/tarefas/:id', { schema: tarefaGetSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, tarefaNaoEncontrada);
    annotateRequestLog(request, { tarefa: id });
    const agora = await service.agora(id, donoOfRequest(request));
    if (agora === null) throw tarefaNaoEncontrada();
    if (agora.record.lote) annotateRequestLog(request, { lote: agora.record.lote });
    if (agora.estado === 'aguardando' || agora.estado === 'processando') reply.header('retry-after', RETRY_AFTER_S);
    return reply.send(await monitorOf(service, agora));
  });

  app.get<WithId>('/api/tarefas/:id/resultado', { schema: tarefaResultadoSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, tarefaNaoEncontrada);
    annotateRequestLog(request, { tarefa: id });
    const agora = await service.agora(id, donoOfRequest(request));
    if (agora === null) throw tarefaNaoEncontrada();
    // The corrected census file exists in one format: asking for another is refused, as an unknown format is elsewhere.
    if (agora.record.rota === 'censo-corrigido' && (request.query as Record<string, unknown>).format !== undefined) {
      throw invalido.formatoCorrigido();
    }
    const format = agora.record.rota === 'censo-corrigido' ? null : explicitFormat(request.query);
    switch (agora.estado) {
      case 'aguardando':
      case 'processando':
        reply.header('retry-after', RETRY_AFTER_S);
        throw new ConflictError(mensagens.naoConcluida);
      case 'cancelada':
        throw new ConflictError(mensagens.cancelada);
      case 'falhou': {
        const erro = agora.record.erro!;
        throw new JobRejectedError(erro.status, 'TAREFA_FALHOU', erro.erro);
      }
      case 'concluida':
        return sendResultado(reply, storage, agora.record, format);
    }
  });

  app.delete<WithId>('/api/tarefas/:id', { schema: tarefaDeleteSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, tarefaNaoEncontrada);
    annotateRequestLog(request, { tarefa: id });
    if (!(await service.deleteTarefa(id, donoOfRequest(request)))) throw tarefaNaoEncontrada();
    return reply.code(204).send();
  });

  // ------------------------------------------------------------------ batches (SPEC §7.3)

  await app.register(async (json) => {
    // This route's body is small JSON; a malformed one gets a message about JSON (the app's
    // default parser errors speak of multipart, which the upload routes need).
    json.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string', bodyLimit: 64 * 1024 }, (_request, body, done) => {
      const text = String(body).trim();
      try {
        done(null, text === '' ? {} : JSON.parse(text));
      } catch {
        done(invalido.corpo(), undefined);
      }
    });
    json.addContentTypeParser('*', (_request, _payload, done) => done(invalido.corpo(), undefined));

    json.post('/api/lotes', { schema: loteCreateSchema, ...describeOnly }, async (request, reply) => {
      const body = request.body ?? {};
      if (typeof body !== 'object' || Array.isArray(body)) throw invalido.corpo();
      const { nome = null, webhook = null } = body as { nome?: unknown; webhook?: unknown };
      if (nome !== null && (typeof nome !== 'string' || nome.length > 200)) throw invalido.nome();
      let url: string | null = null;
      if (webhook !== null) {
        try {
          const parsed = parseWebhookUrl(webhook, config.webhookAllowPrivate);
          await checkWebhookDestination(parsed, config.webhookAllowPrivate);
          url = parsed.href;
        } catch (err) {
          if (err instanceof WebhookRefused) throw invalido.webhook(err.message);
          throw err;
        }
      }

      const header = request.headers['idempotency-key'];
      if (header !== undefined && (typeof header !== 'string' || !/^[\x20-\x7e]{1,255}$/.test(header))) throw invalido.idempotencyKey();
      const dono = donoOfRequest(request);
      // The principal's own key space: a replay answers webhook_segredo to the principal that created the batch, never to another.
      const idemKey = header === undefined ? null : service.idempotencia.key('lotes', dono, header);
      const digest = createHash('sha256')
        .update(JSON.stringify([nome, url]))
        .digest('hex');

      const answer = async (lote: LoteRecord, replayed: boolean) => {
        annotateRequestLog(request, { lote: lote.id });
        reply.code(201).header('location', `/api/lotes/${lote.id}`);
        if (replayed) reply.header('idempotent-replayed', 'true');
        const monitor = loteMonitor(lote, await service.listagens.processando(lote.id));
        return reply.send(lote.webhook ? { ...monitor, webhook_segredo: lote.webhook.segredo } : monitor);
      };
      // The batch an earlier request with this key created, if any. Not the reply itself: a
      // Fastify reply is thenable, and awaiting it yields undefined once it is sent.
      const replayOf = async (state: Awaited<ReturnType<typeof service.idempotencia.read>>): Promise<LoteRecord | null> => {
        if (state.state !== 'done') return null;
        if (state.digest !== digest) throw new IdempotencyMismatchError();
        const lote = await service.lote(state.lote ?? '', dono);
        if (lote === null) throw loteNaoEncontrado();
        return lote;
      };
      if (idemKey !== null) {
        const earlier = await replayOf(await service.idempotencia.read(idemKey));
        if (earlier !== null) return answer(earlier, true);
      }

      const now = service.now();
      const lote: LoteRecord = {
        id: newId(),
        dono,
        nome,
        estado: 'aberto',
        criadoEm: now,
        fechadoEm: null,
        concluidoEm: null,
        expiraEm: null,
        ultimoEnvioEm: now,
        total: 0,
        concluida: 0,
        falhou: 0,
        cancelada: 0,
        divergencias: { concluida: 0, falhou: 0 },
        seq: 0,
        webhook: url === null ? null : { url, segredo: newWebhookSecret() },
        idem: idemKey,
        // The creating request's trace, for its files' traces to link to (issue 56).
        ...withRastro(traceparentNow()),
      };
      const created = await service.createLote(lote, idemKey === null ? null : { key: idemKey, digest });
      if (created.ok) return answer(lote, false);
      if (created.why === 'muitos-abertos') throw new TooManyLotesError();
      // Another request with this key created its batch meanwhile.
      const earlier = await replayOf(created.existing);
      if (earlier !== null) return answer(earlier, true);
      throw new ConflictError(mensagens.idemEmAndamento);
    });
  });

  app.get('/api/lotes', { schema: lotesListSchema, ...describeOnly }, async (request, reply) => {
    const { cursor, limit } = lotesQuery(request.query as Record<string, unknown>);
    const page = await service.listagens.listLotes(donoOfRequest(request), cursor, limit);
    const processando = await service.listagens.processandoPorLote();
    const lotes = page.lotes.map((lote) => loteMonitor(lote, processando.get(lote.id) ?? 0));
    return reply.send({ lotes, next_cursor: page.next === null ? null : encodeLotesCursor(page.next) });
  });

  app.get<WithId>('/api/lotes/:id', { schema: loteGetSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, loteNaoEncontrado);
    annotateRequestLog(request, { lote: id });
    const lote = await service.lote(id, donoOfRequest(request));
    if (lote === null) throw loteNaoEncontrado();
    return loteAnswer(reply, lote);
  });

  app.post<WithId>('/api/lotes/:id/fechar', { schema: loteFecharSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, loteNaoEncontrado);
    annotateRequestLog(request, { lote: id });
    const lote = await service.fecharLote(id, { dono: donoOfRequest(request) });
    if (lote === null) throw loteNaoEncontrado();
    return loteAnswer(reply, lote);
  });

  app.get<WithId>('/api/lotes/:id/tarefas', { schema: loteTarefasSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, loteNaoEncontrado);
    annotateRequestLog(request, { lote: id });
    const query = listQuery(request.query as Record<string, unknown>);
    const lote = await service.lote(id, donoOfRequest(request));
    if (lote === null) throw loteNaoEncontrado();
    const page = await service.listagens.listLote(id, query);
    const tarefas = await monitorsOf(service, page.tarefas);
    return reply.send({ tarefas, next_cursor: page.next === null ? null : encodeCursor(page.next) });
  });

  /**
   * The exports built from a batch's results (SPEC §7.3, §10): the caller's batch, a known format,
   * the counts in the headers, and a 409 before `concluido` unless `?parcial=true`.
   */
  const loteExport = (
    url: string,
    schema: object,
    send: (
      reply: FastifyReply,
      id: string,
      format: NonNullable<ReturnType<typeof requestedFormat>>,
    ) => FastifyReply | Promise<FastifyReply>,
  ) =>
    app.get<WithId>(url, { schema, ...describeOnly }, async (request, reply) => {
      const id = idOf(request, loteNaoEncontrado);
      annotateRequestLog(request, { lote: id });
      const format = requestedFormat(request.query);
      if (format === null) throw new BadInputError(FORMAT_ERROR);
      await loteParaResposta(service, request, reply, id, parcialOf(request.query));
      return send(reply, id, format);
    });

  loteExport('/api/lotes/:id/divergencias', loteDivergenciasSchema, (reply, id, format) =>
    sendLoteDivergencias(reply, service, storage, id, format),
  );
  loteExport('/api/lotes/:id/falhas', loteFalhasSchema, (reply, id, format) => sendLoteFalhas(reply, service, id, format));
  // A state's progress (SPEC §10): each school's standing, and what changed from an earlier round.
  loteExport('/api/lotes/:id/resumo', loteResumoSchema, (reply, id, format) =>
    sendResumo(reply, service, storage, id, format, format === 'json' ? app.tarefas.safra : null),
  );
  cartasRoute(app);
  corrigidosRoute(app);

  app.get<WithId>('/api/lotes/:id/comparacao', { schema: loteComparacaoSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, loteNaoEncontrado);
    annotateRequestLog(request, { lote: id });
    const format = requestedFormat(request.query);
    if (format === null) throw new BadInputError(FORMAT_ERROR);
    const anteriorId = (request.query as Record<string, unknown>).anterior;
    if (typeof anteriorId !== 'string' || anteriorId === '' || anteriorId === id) throw invalido.anterior();
    // An id that cannot exist is as unknown as one that does not (issue 50): one answer, 404, as for `:id`.
    if (!isId(anteriorId)) throw loteNaoEncontrado();
    const dono = donoOfRequest(request);
    // Both rounds the caller's (SPEC §7.1): another's earlier batch is as unknown as a made-up id.
    const [lote, anterior] = await Promise.all([service.lote(id, dono), service.lote(anteriorId, dono)]);
    if (lote === null) throw loteNaoEncontrado();
    if (anterior === null) {
      // Its results expired (SPEC §13): the season ledger may still hold the round, the caller's.
      const rodada = (await app.tarefas.safra?.ledger.rodada(anteriorId, donoKey(dono))) ?? null;
      if (rodada === null || app.tarefas.safra === null) throw loteNaoEncontrado();
      await answerOnlyWhole(service, reply, lote, false);
      return sendComparacaoSafra(reply, service, storage, app.tarefas.safra, { anterior: rodada, atual: id, dono: donoKey(dono) }, format);
    }
    await answerOnlyWhole(service, reply, lote, false);
    if (anterior.estado !== 'concluido') {
      reply.header('retry-after', RETRY_AFTER_S);
      throw new ConflictError(mensagens.loteNaoConcluido);
    }
    return sendComparacao(reply, service, storage, { anterior: anteriorId, atual: id }, format);
  });

  app.delete<WithId>('/api/lotes/:id', { schema: loteDeleteSchema, ...describeOnly }, async (request, reply) => {
    const id = idOf(request, loteNaoEncontrado);
    annotateRequestLog(request, { lote: id });
    const dono = donoOfRequest(request);
    if (await service.deleteLote(id, dono)) return reply.code(204).send();
    // Expired, its season rows kept (SPEC §13): *Apagar* still removes them, the owner's only.
    const safra = app.tarefas.safra;
    if (safra === null || (await safra.ledger.rodada(id, donoKey(dono))) === null) throw loteNaoEncontrado();
    await safra.ledger.apagarLote(id);
    return reply.code(204).send();
  });
}

export const tarefasRoutes = fp(routes, {
  name: 'censo-tarefas-routes',
  fastify: '5.x',
  encapsulate: true,
  dependencies: ['censo-tarefas'],
  decorators: { fastify: ['tarefas'] },
});

/** `rastro` only when there is a trace: a record with tracing off stays as before. */
function withRastro(rastro: string | null): { rastro?: string } {
  return rastro === null ? {} : { rastro };
}
