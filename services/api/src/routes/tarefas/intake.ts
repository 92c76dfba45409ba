// An upload answered later (SPEC §7.1), on the upload routes with `Prefer: respond-async` and on a
// batch's routes (§7.3): the same checks before the body, the same reception, then a task instead
// of a wait. The upload stays in the storage for the task's job; the answer is 202 with the monitor.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { GROUP_ID_PREFIX, OverloadedError, linkActiveSpan, type JobData, type RequestArea } from '@censo/shared';
import { receiveFiles, receiveReturns } from '../../http/uploads.js';
import { annotateRequestLog } from '../../http/request-annotations.js';
import { jobData, requestedFormat, type RouteSpec } from '../../http/retorno-answers.js';
import {
  ConflictError,
  IdempotencyMismatchError,
  invalido,
  loteNaoEncontrado,
  mensagens,
  tarefaNaoEncontrada,
} from '../../tarefas/errors.js';
import { donoOfRequest } from './dono.js';
import { loteLeading, RETRY_AFTER_S } from './results.js';
import {
  isFinal,
  isId,
  RESULT_FILE,
  tarefaMonitor,
  type ArquivoTarefa,
  type Formato,
  type TarefaAgora,
  type TarefaRecord,
} from '../../tarefas/model.js';
import type { NewIds } from '../../tarefas/execution.js';
import type { IdempotencyReservation, IdempotencyState } from '../../tarefas/idempotency.js';
import type { TarefasService } from '../../tarefas/service.js';

/** RFC 7240: `Prefer: respond-async` among the request's preferences (any case, any order, any parameters). */
export function wantsAsync(request: FastifyRequest): boolean {
  const header = request.headers.prefer;
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  return values.some((value) =>
    value.split(',').some((preference) => preference.split(';')[0]!.split('=')[0]!.trim().toLowerCase() === 'respond-async'),
  );
}

/** SPEC §7.2: 1–255 printable ASCII characters. */
function idempotencyKeyOf(request: FastifyRequest): string | null {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return null;
  if (typeof header !== 'string' || !/^[\x20-\x7e]{1,255}$/.test(header)) throw invalido.idempotencyKey();
  return header;
}

/** Where an Idempotency-Key is remembered: per batch on its routes, else the principal's tasks (the key's hash adds the principal). */
export function idempotencyScope(loteId: string | null): string {
  return loteId === null ? 'tarefas' : `lote:${loteId}`;
}

/** What admission found out, for the handler. */
interface Admission {
  readonly idemKey: string | null;
  readonly replay: Extract<IdempotencyState, { state: 'done' }> | null;
  reservation: IdempotencyReservation | null;
  /** Gives back this upload's place under MAX_QUEUED_TAREFAS (once its task is queued or the request ends). */
  readonly release: () => void;
  /** Tasks waiting when the request was admitted: a request's further files are checked against it. */
  readonly waiting: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    tarefaAdmission?: Admission;
    /** The request's tasks exist: their upload areas outlive it. */
    tarefasKept?: boolean;
  }
}

declare module '../../http/request-annotations.js' {
  interface RequestLogFields {
    /** The asynchronous task and batch a request created or read (SPEC §7). */
    tarefa?: string;
    lote?: string;
  }
}

function overloaded(reply: FastifyReply): OverloadedError {
  reply.header('retry-after', '30');
  return new OverloadedError();
}

function inProgress(reply: FastifyReply): ConflictError {
  reply.header('retry-after', RETRY_AFTER_S);
  return new ConflictError(mensagens.idemEmAndamento);
}

/**
 * onRequest, before the body: the batch exists and is open, the backlog has room
 * (MAX_QUEUED_TAREFAS), and the Idempotency-Key is free (reserved now), in progress (409) or
 * already used (compared once the files are in). Does nothing for a synchronous request.
 */
export function admitTarefa(app: FastifyInstance, route: RouteSpec, options: { lote: boolean }): onRequestHookHandler {
  return async (request, reply) => {
    if (!options.lote && !wantsAsync(request)) return;
    const { service, config, admitted } = app.tarefas;
    const idemKey = idempotencyKeyOf(request);
    const dono = donoOfRequest(request);
    const loteId = options.lote ? (request.params as { id: string }).id : null;
    if (loteId !== null) {
      annotateRequestLog(request, { lote: loteId });
      if (!isId(loteId)) throw loteNaoEncontrado();
    }
    // Another principal's batch is not found, exactly as an unknown one (no oracle).
    const lote = loteId === null ? null : await service.lote(loteId, dono);
    if (loteId !== null && lote === null) throw loteNaoEncontrado();
    // The file's trace links to its batch's, so an operator goes from a slow file to its batch (issue 56).
    linkActiveSpan(lote?.rastro);

    let storeKey: string | null = null;
    if (idemKey !== null) {
      storeKey = service.idempotencia.key(idempotencyScope(loteId), dono, idemKey);
      const state = await service.idempotencia.read(storeKey);
      if (state.state === 'receiving') throw inProgress(reply);
      if (state.state === 'done') {
        // Decided once the files are in: the same request is a replay, another one a 422.
        request.tarefaAdmission = { idemKey: storeKey, replay: state, reservation: null, release: () => undefined, waiting: 0 };
        return;
      }
    }
    if (lote !== null && lote.estado !== 'aberto') throw new ConflictError(mensagens.loteFechado);
    // Held before the backlog is read: of uploads checked together, each sees the others.
    const release = admitted.hold();
    reply.raw.once('close', release);
    const waiting = await service.execution.waiting();
    if (waiting + admitted.current > config.maxQueuedTarefas) {
      release();
      throw overloaded(reply);
    }
    const admission: Admission = { idemKey: storeKey, replay: null, reservation: null, release, waiting };
    if (storeKey !== null) {
      admission.reservation = await service.idempotencia.reserve(storeKey);
      if (admission.reservation === null) throw inProgress(reply);
      // Given back if the request ends without a task (refused file, client gone...).
      reply.raw.once('close', () => {
        const held = admission.reservation;
        if (held) void service.idempotencia.release(held).catch(() => undefined);
      });
    }
    request.tarefaAdmission = admission;
  };
}

/** The digest an Idempotency-Key is bound to: route, format, reference and every file's SHA-256. */
function requestDigest(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** The monitor with its batch's expiry (a batch's task lives as long as its batch). */
export async function monitorOf(service: TarefasService, agora: TarefaAgora) {
  return (await monitorsOf(service, [agora]))[0]!;
}

/**
 * Several tasks' monitors, each batch's record read once (one MGET), after the tasks' states as
 * monitorOf reads it: a page of a batch's tasks read the batch once per finished task (issue 55:
 * the first GET a file in the scale profile's count).
 */
export async function monitorsOf(service: TarefasService, agoras: readonly TarefaAgora[]) {
  const ids = [...new Set(agoras.flatMap((agora) => (agora.record.lote !== null && isFinal(agora.estado) ? [agora.record.lote] : [])))];
  const expiry = new Map<string, number | null>();
  if (ids.length > 0) {
    const lotes = await service.lotes(ids);
    ids.forEach((id, i) => expiry.set(id, lotes[i]?.expiraEm ?? null));
  }
  return agoras.map((agora) =>
    tarefaMonitor(agora, agora.record.lote !== null && isFinal(agora.estado) ? (expiry.get(agora.record.lote) ?? null) : null),
  );
}

/** 202 with the task's monitor (SPEC §7.1). */
export async function replyAccepted(
  service: TarefasService,
  request: FastifyRequest,
  reply: FastifyReply,
  agora: TarefaAgora,
  replayed: boolean,
): Promise<FastifyReply> {
  annotateRequestLog(request, { tarefa: agora.record.id, ...(agora.record.lote ? { lote: agora.record.lote } : {}) });
  reply.code(202).header('location', `/api/tarefas/${agora.record.id}`);
  if (wantsAsync(request)) reply.header('preference-applied', 'respond-async');
  if (!isFinal(agora.estado)) reply.header('retry-after', RETRY_AFTER_S);
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send(await monitorOf(service, agora));
}

/** 202 with the monitors of a request's several tasks, in the order of its files (SPEC §7.3). */
async function replyAcceptedMany(
  service: TarefasService,
  request: FastifyRequest,
  reply: FastifyReply,
  agoras: readonly TarefaAgora[],
  replayed: boolean,
): Promise<FastifyReply> {
  annotateRequestLog(request, { lote: agoras[0]!.record.lote ?? undefined });
  reply.code(202);
  if (agoras.some((agora) => !isFinal(agora.estado))) reply.header('retry-after', RETRY_AFTER_S);
  if (replayed) reply.header('idempotent-replayed', 'true');
  return reply.send({ tarefas: await monitorsOf(service, agoras) });
}

/** The handler: receives the files into the task's own area, then records and queues the task. */
export async function intakeTarefa(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  route: RouteSpec,
  loteId: string | null,
): Promise<FastifyReply> {
  // A batch's divergencias-rf route takes several returns per request (SPEC §7.3, decided).
  if (loteId !== null && route.kind === 'divergencias') return intakeReturns(app, request, reply, route, loteId);
  const { storage, config, service } = app.tarefas;
  const admission = request.tarefaAdmission!;
  const ids = service.execution.idSource();
  const id = ids();
  const area = storage.area(id);
  annotateRequestLog(request, { jobId: id, kind: route.kind, tarefa: id });
  removeUnlessKept(request, reply, [area]);

  await area.open();
  const files = await receiveFiles(
    request,
    area,
    route.fields,
    { totalMs: Math.max(1, config.uploadTimeoutMs - reply.elapsedTime), idleMs: config.uploadIdleMs },
    { textFields: loteId === null ? [] : ['referencia'] },
  );
  const referencia = loteId === null ? null : (files.fields.referencia ?? null);
  if (referencia !== null && referencia.length > 255) throw invalido.referencia();
  const formato = formatoOf(route, request);
  const digest = requestDigest([route.rota, formato, referencia, files.sha256.retorno, files.sha256.txt]);
  if (admission.replay) return replay(app, request, reply, admission.replay, digest);

  const arquivos: ArquivoTarefa[] = [
    { campo: 'retorno', nome: files.retornoName, bytes: files.bytes.retorno, sha256: files.sha256.retorno },
  ];
  if (files.txt) arquivos.push({ campo: 'txt', nome: files.txtName ?? '', bytes: files.bytes.txt ?? 0, sha256: files.sha256.txt ?? '' });
  const task: NewTask = {
    record: newRecord(request, route, {
      id,
      formato,
      referencia,
      loteId,
      arquivos,
      txtName: files.txtName,
      entradas: [`retorno.${files.retorno.format}`, ...(files.txt ? ['censo.txt'] : [])],
    }),
    // A list task always stores the JSON answer: every format is converted from it (results.ts).
    data: jobData(route.kind, files, 'json', area.ref(RESULT_FILE)),
  };
  const [created] = await createAndQueue(app, request, reply, [task], digest, ids);
  return replyAccepted(app.tarefas.service, request, reply, { record: created!, estado: 'aguardando', iniciadaEm: null }, false);
}

/**
 * A batch's divergencias-rf upload with one or several returns (up to MAX_RETORNOS_POR_ENVIO),
 * each its own task, all created by one commit and queued by one call: a state's burst costs a
 * request, not a request per school. One return is answered as always; several with
 * `{"tarefas": [monitors]}` in the order sent. The Idempotency-Key covers the whole request.
 */
async function intakeReturns(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  route: RouteSpec,
  loteId: string,
): Promise<FastifyReply> {
  const { service, storage, config, admitted } = app.tarefas;
  const admission = request.tarefaAdmission!;
  const areas: RequestArea[] = [];
  // Every task and group of the request on one queue (idSource): its submit is all or none.
  const ids = service.execution.idSource();
  removeUnlessKept(request, reply, areas);
  const releases: (() => void)[] = [];
  const releaseAll = () => {
    for (const release of releases) release();
  };
  reply.raw.once('close', releaseAll);
  const files = await receiveReturns(
    request,
    async () => {
      const area = storage.area(ids());
      areas.push(area);
      await area.open();
      return area;
    },
    { totalMs: Math.max(1, config.uploadTimeoutMs - reply.elapsedTime), idleMs: config.uploadIdleMs },
    () => {
      // Each further file holds a place under MAX_QUEUED_TAREFAS too (strict per replica).
      if (admission.replay) return;
      releases.push(admitted.hold());
      if (admission.waiting + admitted.current > config.maxQueuedTarefas) throw overloaded(reply);
    },
  );
  for (const file of files) if (file.referencia !== null && file.referencia.length > 255) throw invalido.referencia();
  const formato = formatoOf(route, request);
  const digest =
    files.length === 1
      ? requestDigest([route.rota, formato, files[0]!.referencia, files[0]!.sha256, null])
      : requestDigest([route.rota, formato, ...files.map((file) => [file.referencia, file.sha256])]);
  if (admission.replay) return replay(app, request, reply, admission.replay, digest);

  const tasks = files.map((file): NewTask => {
    const arquivos: ArquivoTarefa[] = [{ campo: 'retorno', nome: file.retornoName, bytes: file.bytes, sha256: file.sha256 }];
    return {
      record: newRecord(request, route, {
        id: file.area.id,
        formato,
        referencia: file.referencia,
        loteId,
        arquivos,
        txtName: null,
        entradas: [`retorno.${file.retorno.format}`],
      }),
      data: {
        kind: 'divergencias',
        retorno: file.retorno,
        format: 'json',
        resultPath: file.area.ref(RESULT_FILE),
        // Its lines of the batch's combined CSV, written by the job (results.ts sends them as they are).
        batchLines: loteLeading(file.referencia, file.retornoName),
      },
    };
  });
  annotateRequestLog(request, {
    kind: route.kind,
    ...(tasks.length === 1 ? { jobId: tasks[0]!.record.id, tarefa: tasks[0]!.record.id } : {}),
  });
  try {
    const created = await createAndQueue(app, request, reply, tasks, digest, ids);
    if (created.length === 1)
      return replyAccepted(service, request, reply, { record: created[0]!, estado: 'aguardando', iniciadaEm: null }, false);
    return replyAcceptedMany(
      service,
      request,
      reply,
      created.map((record) => ({ record, estado: 'aguardando', iniciadaEm: null })),
      false,
    );
  } finally {
    releaseAll();
  }
}

interface NewTask {
  readonly record: TarefaRecord;
  readonly data: JobData;
}

function formatoOf(route: RouteSpec, request: FastifyRequest): Formato {
  return route.kind === 'censo-corrigido' ? 'txt' : (requestedFormat(request.query) ?? 'json');
}

/** The areas of a request's uploads are removed when the request ends, unless their tasks took them. */
function removeUnlessKept(request: FastifyRequest, reply: FastifyReply, areas: readonly RequestArea[]): void {
  reply.raw.once('close', () => {
    if (request.tarefasKept) return;
    for (const area of areas) {
      void area.remove().catch((err: unknown) => request.log.error({ err, uploadId: area.id }, 'could not remove upload files'));
    }
  });
}

function newRecord(
  request: FastifyRequest,
  route: RouteSpec,
  task: {
    readonly id: string;
    readonly formato: Formato;
    readonly referencia: string | null;
    readonly loteId: string | null;
    readonly arquivos: ArquivoTarefa[];
    readonly txtName: string | null;
    /** The upload's files in the task's area (dropped once its job ends). */
    readonly entradas: readonly string[];
  },
): TarefaRecord {
  const { service } = request.server.tarefas;
  return {
    id: task.id,
    dono: donoOfRequest(request),
    rota: route.rota,
    formato: task.formato,
    estado: 'aguardando',
    criadaEm: service.now(),
    iniciadaEm: null,
    concluidaEm: null,
    expiraEm: null,
    erro: null,
    resultado: null,
    referencia: task.referencia,
    lote: task.loteId,
    seq: 0,
    arquivo: task.arquivos[0]!.nome,
    txtName: task.txtName,
    arquivos: task.arquivos,
    entradas: task.entradas,
    idem: request.tarefaAdmission!.reservation?.key ?? null,
  };
}

/** Records the tasks (one commit) and queues their jobs (one call); their records, in order. */
async function createAndQueue(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  sent: readonly NewTask[],
  digest: string,
  ids: NewIds,
): Promise<TarefaRecord[]> {
  const { service } = app.tarefas;
  const admission = request.tarefaAdmission!;
  // One file never makes a group: it asks nothing of the workers' handshake.
  const tasks = grouped(sent, sent.length > 1 ? await service.execution.groupSize() : 1, ids);
  const created = await service.createTarefas(
    tasks.map((task) => task.record),
    admission.reservation ? { reservation: admission.reservation, digest } : null,
  );
  if (!created.ok) {
    if (created.why === 'lote-nao-encontrado') throw loteNaoEncontrado();
    if (created.why === 'lote-fechado') throw new ConflictError(mensagens.loteFechado);
    throw inProgress(reply);
  }
  // The reservation became the key's record with the tasks: nothing to give back any more.
  admission.reservation = null;
  request.tarefasKept = true;
  try {
    await service.execution.submit(tasks.map((task) => ({ id: task.record.id, grupo: task.record.grupo ?? null, data: task.data })));
  } catch (err) {
    for (const record of created.records) await service.deleteTarefa(record.id);
    throw err;
  } finally {
    // In the queue now (or gone): counted by the backlog itself from here on.
    admission.release();
  }
  return created.records;
}

/**
 * A request's tasks, `size` at a time carried by one group job (TAREFAS_POR_JOB): each record
 * names its group, so any API finds its task's state there. A group of one is a job of its own.
 * Group ids come from the request's source, as its tasks' ids do: all on one queue.
 */
function grouped(tasks: readonly NewTask[], size: number, ids: NewIds): readonly NewTask[] {
  if (size <= 1 || tasks.length <= 1) return tasks;
  const out: NewTask[] = [];
  for (let at = 0; at < tasks.length; at += size) {
    const chunk = tasks.slice(at, at + size);
    if (chunk.length === 1) {
      out.push(chunk[0]!);
      continue;
    }
    const grupo = ids(GROUP_ID_PREFIX);
    for (const task of chunk) out.push({ ...task, record: { ...task.record, grupo } });
  }
  return out;
}

/** The same request again under its Idempotency-Key: its tasks as they are now; another request: 422. */
async function replay(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  done: Extract<IdempotencyState, { state: 'done' }>,
  digest: string,
): Promise<FastifyReply> {
  const { service } = app.tarefas;
  if (done.digest !== digest) throw new IdempotencyMismatchError();
  const ids = done.tarefas ?? [done.tarefa ?? ''];
  const agoras: TarefaAgora[] = [];
  for (const id of ids) {
    const agora = await service.agora(id, donoOfRequest(request));
    if (agora === null) throw tarefaNaoEncontrada();
    agoras.push(agora);
  }
  if (done.tarefas === undefined) return replyAccepted(service, request, reply, agoras[0]!, true);
  return replyAcceptedMany(service, request, reply, agoras, true);
}
