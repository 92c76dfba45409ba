// A task's stored result as an answer (SPEC §7.1), and a batch's combined divergences (SPEC §7.3).
// A list task always stores the JSON answer (what runJob writes for `format=json`): it is sent as
// it is, or its items are read back one at a time and written as CSV or XLSX by the same writers
// the synchronous routes use, so every format comes from one job and memory stays bounded.
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  BATCH_LINES_FILE,
  DIVERGENCIA_COLUMNS,
  DIVERGENCIAS_TABLE,
  batchLine,
  batchLinePrefix,
  csvLine,
  csvRowChunks,
  FALHAS_PLANILHA,
  LOTE_DIVERGENCIAS_PLANILHA,
  PESSOAS_TABLE,
  planilhaRows,
  type TableShape,
  csvChunks,
  jsonListChunks,
  jsonListsChunks,
  tableRows,
  xlsxBookStream,
  xlsxStream,
  type OutputFormat,
  type Storage,
} from '@censo/shared';
import { attachment } from '../../http/content-disposition.js';
import { CONTENT_TYPES, describeResult, LIST_NAMES } from '../../http/retorno-answers.js';
import { KIND_OF, RESULT_FILE, type ContagemDivergencias, type LoteRecord, type TarefaRecord } from '../../tarefas/model.js';
import type { TarefasService } from '../../tarefas/service.js';
import { ConflictError, invalido, loteNaoEncontrado, mensagens } from '../../tarefas/errors.js';
import { donoOfRequest } from './dono.js';

/** Seconds a client is asked to wait before looking at an unfinished task or batch again. */
export const RETRY_AFTER_S = '2';

/**
 * The items of a `{"<key>":[{...},{...}]}` answer as the service writes it, one parsed object at a
 * time: the array's top-level objects are cut out by tracking strings and nesting, never by
 * holding the whole text.
 */
export async function* jsonListItems(source: AsyncIterable<Buffer | string>): AsyncGenerator<Record<string, unknown>> {
  const decoder = new TextDecoder('utf-8');
  let inArray = false;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let item = '';
  for await (const chunk of source) {
    const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    // Where the item being read starts in this chunk (0: it began in an earlier one).
    let start = depth > 0 ? 0 : -1;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        continue;
      }
      if (!inArray) {
        if (c === 0x5b) inArray = true; // the list's `[`
        continue;
      }
      if (c === 0x22) inString = true;
      else if (c === 0x7b) {
        if (depth++ === 0) start = i;
      } else if (c === 0x7d && --depth === 0) {
        yield JSON.parse(item + text.slice(start, i + 1)) as Record<string, unknown>;
        item = '';
        start = -1;
      }
    }
    if (depth > 0) item += text.slice(start);
  }
}

/**
 * A stored list up to this size is parsed whole, by one native JSON.parse (a school's return:
 * ~150 KB for 750 divergences); a larger one item by item, so memory stays bounded by this.
 * Measured on a 5,000-school batch's combined CSV: the item-by-item scan cost the API about as
 * much again as the parse it feeds.
 */
const WHOLE_LIST_BYTES = 4 * 1024 * 1024;

/** The items of a stored list result of `bytes` bytes (see WHOLE_LIST_BYTES). */
async function* storedItems(stored: Readable, bytes: number): AsyncGenerator<Record<string, unknown>> {
  if (bytes > WHOLE_LIST_BYTES) {
    yield* jsonListItems(stored);
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stored) chunks.push(chunk as Buffer);
  // The service's own `{"<key>": [...]}`: its one list.
  const list = Object.values(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, Record<string, unknown>[]>)[0] ?? [];
  yield* list;
}

/** The columns of a list task's table. */
function tableOf(record: TarefaRecord) {
  return record.rota === 'divergencias-rf' ? DIVERGENCIAS_TABLE : PESSOAS_TABLE;
}

/** Items in `format` as a stream of the synchronous route's answer body. */
function listBody(items: AsyncIterable<object>, format: Exclude<OutputFormat, 'json'>, table: TableShape): Readable {
  if (format === 'csv') return Readable.from(csvChunks(table.columns, tableRows(items, table.columns)));
  return xlsxStream(table.key, table.planilha.columns, planilhaRows(items, table.planilha));
}

/**
 * A concluded task's result: exactly the synchronous route's answer for the task's format (or
 * `format`, a list route's other format, converted from the stored JSON).
 */
export async function sendResultado(
  reply: FastifyReply,
  storage: Storage,
  record: TarefaRecord,
  format: OutputFormat | null,
): Promise<FastifyReply> {
  const kind = KIND_OF[record.rota];
  const resultado = record.resultado!;
  const stored = await storage.area(record.id).read(RESULT_FILE);
  if (kind === 'censo-corrigido') {
    describeResult(reply, kind, 'json', record.txtName, resultado);
    return reply.header('content-length', resultado.bytes).send(stored);
  }
  const wanted: OutputFormat = format ?? (record.formato as OutputFormat);
  describeResult(reply, kind, wanted, record.txtName, resultado);
  if (wanted === 'json') return reply.header('content-length', resultado.bytes).send(stored);
  return reply.send(listBody(storedItems(stored, resultado.bytes), wanted, tableOf(record)));
}

/** The fields a batch's task's divergences lead with in the batch's answers: its `referencia` and `arquivo`. */
export function loteLeading(referencia: string | null, arquivo: string): [string, string] {
  return [referencia ?? '', arquivo];
}

/** The batch's concluded divergencias-rf tasks, in creation order (every task told to `onTarefa`). */
async function* loteConcluidas(
  service: TarefasService,
  loteId: string,
  onTarefa?: (record: TarefaRecord) => void,
): AsyncGenerator<TarefaRecord> {
  for await (const record of service.listagens.loteTarefas(loteId)) {
    onTarefa?.(record);
    if (record.rota === 'divergencias-rf' && record.estado === 'concluida') yield record;
  }
}

/**
 * A concluded task's result, or null when the task itself is gone (deleted or expired since the
 * batch was listed), which the answer skips. A task still recorded whose result cannot be read is
 * the storage's failure (a volume not mounted, an API replica given another UPLOAD_DIR, a bucket
 * down): the answer breaks off instead of leaving the task out of a complete-looking answer.
 */
async function storedResult(service: TarefasService, storage: Storage, record: TarefaRecord): Promise<Readable | null> {
  try {
    return await storage.area(record.id).read(RESULT_FILE);
  } catch (err) {
    if ((await service.tarefa(record.id)) === null) return null;
    throw err;
  }
}

/** Every divergence of the batch's concluded divergencias-rf tasks, in creation order, each with `referencia` and `arquivo`. */
export async function* loteDivergencias(
  service: TarefasService,
  storage: Storage,
  loteId: string,
  /** Told every task of the batch as it is read, in order (one pass for whoever also counts the tasks). */
  onTarefa?: (record: TarefaRecord) => void,
): AsyncGenerator<Record<string, unknown>> {
  for await (const record of loteConcluidas(service, loteId, onTarefa)) {
    const result = await storedResult(service, storage, record);
    if (result === null) continue;
    const [referencia, arquivo] = loteLeading(record.referencia, record.arquivo);
    for await (const item of storedItems(result, record.resultado?.bytes ?? Infinity)) yield { referencia, arquivo, ...item };
  }
}

/**
 * The batch's combined CSV: its header, then each task's lines as its job stored them
 * (BATCH_LINES_FILE), sent as they are. A task without them (its job ran on a worker from before
 * them, during a rolling upgrade) has its JSON result written as the same lines.
 */
async function* loteCsvChunks(service: TarefasService, storage: Storage, loteId: string): AsyncGenerator<Buffer | string> {
  yield csvLine(LOTE_DIVERGENCIAS_TABLE.columns);
  for await (const record of loteConcluidas(service, loteId)) {
    // Without them (a worker from before them, or a file that cannot be read), converted from the result.
    const lines = await storage
      .area(record.id)
      .read(BATCH_LINES_FILE)
      .catch(() => null);
    if (lines !== null) {
      yield* lines as AsyncIterable<Buffer>;
      continue;
    }
    const result = await storedResult(service, storage, record);
    if (result === null) continue;
    const prefix = batchLinePrefix(loteLeading(record.referencia, record.arquivo));
    yield* csvRowChunks(storedItems(result, record.resultado?.bytes ?? Infinity), (item) => batchLine(prefix, item, DIVERGENCIA_COLUMNS));
  }
}

/** A failed file of a batch (SPEC §7.3): never dropped from its answers. */
export interface Falha {
  readonly referencia: string;
  readonly arquivo: string;
  readonly status: number;
  readonly erro: string;
}

/** The batch's failed divergencias-rf tasks, in creation order. */
async function* loteFalhas(service: TarefasService, loteId: string): AsyncGenerator<Falha> {
  for await (const record of service.listagens.loteTarefas(loteId)) {
    if (record.rota !== 'divergencias-rf' || record.estado !== 'falhou' || record.erro === null) continue;
    yield { referencia: record.referencia ?? '', arquivo: record.arquivo, status: record.erro.status, erro: record.erro.erro };
  }
}

const LOTE_DIVERGENCIAS_TABLE: TableShape = {
  key: LIST_NAMES.divergencias,
  columns: ['referencia', 'arquivo', ...DIVERGENCIA_COLUMNS],
  planilha: LOTE_DIVERGENCIAS_PLANILHA,
};
const FALHAS = 'falhas';
const FALHAS_TABLE: TableShape = { key: FALHAS, columns: ['referencia', 'arquivo', 'status', 'erro'], planilha: FALHAS_PLANILHA };

/**
 * How many of the batch's divergencias-rf tasks concluded and failed (the `Lote-Tarefas-*`
 * headers): kept on the record; counted from the tasks for a record of a version before that.
 */
export async function divergenciasCounts(service: TarefasService, lote: LoteRecord): Promise<ContagemDivergencias> {
  if (lote.divergencias) return lote.divergencias;
  let concluida = 0;
  let falhou = 0;
  for await (const record of service.listagens.loteTarefas(lote.id)) {
    if (record.rota !== 'divergencias-rf') continue;
    if (record.estado === 'concluida') concluida++;
    else if (record.estado === 'falhou') falhou++;
  }
  return { concluida, falhou };
}

/** GET /api/lotes/{id}/divergencias (SPEC §7.3): streamed, one task's result at a time, then the failed files. */
export function sendLoteDivergencias(
  reply: FastifyReply,
  service: TarefasService,
  storage: Storage,
  loteId: string,
  format: OutputFormat,
): FastifyReply {
  // A batch's export is a download in every format, json included: it gets a file name.
  reply.type(CONTENT_TYPES[format]).header('content-disposition', attachment(`${LIST_NAMES.divergencias}.${format}`));
  if (format === 'csv') return reply.send(Readable.from(loteCsvChunks(service, storage, loteId)));
  const items = loteDivergencias(service, storage, loteId);
  if (format === 'json') {
    return reply.send(
      Readable.from(
        jsonListsChunks([
          [LIST_NAMES.divergencias, items],
          [FALHAS, loteFalhas(service, loteId)],
        ]),
      ),
    );
  }
  // A spreadsheet has room for both: the failed files on a sheet of their own.
  return reply.send(
    xlsxBookStream([
      { name: LIST_NAMES.divergencias, ...planilhaTable(LOTE_DIVERGENCIAS_TABLE, items) },
      { name: 'Falhas', ...planilhaTable(FALHAS_TABLE, loteFalhas(service, loteId)) },
    ]),
  );
}

/** GET /api/lotes/{id}/falhas (SPEC §7.3): the failed files alone. */
export function sendLoteFalhas(reply: FastifyReply, service: TarefasService, loteId: string, format: OutputFormat): FastifyReply {
  const falhas = loteFalhas(service, loteId);
  reply.type(CONTENT_TYPES[format]).header('content-disposition', attachment(`${FALHAS}.${format}`));
  if (format === 'json') return reply.send(Readable.from(jsonListChunks(FALHAS, falhas)));
  return reply.send(listBody(falhas, format, FALHAS_TABLE));
}

/** A table's sheet: its words and its items' cells. */
function planilhaTable(table: TableShape, items: AsyncIterable<object>) {
  return { columns: table.planilha.columns, rows: planilhaRows(items, table.planilha) };
}

/** `?parcial=`: absent or `false`, or `true` (SPEC §7.3). */
export function parcialOf(query: unknown): boolean {
  const parcial = (query as Record<string, unknown> | undefined)?.parcial;
  if (parcial === undefined || parcial === 'false') return false;
  if (parcial === 'true') return true;
  throw invalido.parcial();
}

/**
 * The caller's batch `id` for an answer built from its results: 404 when it is unknown or another
 * principal's (SPEC §7.1: the same answer), then what answerOnlyWhole says first. The routes that
 * answer from a batch's results (exports, letters, corrected files, the i-Educar script) begin so.
 */
export async function loteParaResposta(
  service: TarefasService,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string,
  parcial: boolean,
): Promise<void> {
  const lote = await service.lote(id, donoOfRequest(request));
  if (lote === null) throw loteNaoEncontrado();
  await answerOnlyWhole(service, reply, lote, parcial);
}

/**
 * What every answer built from a batch's results says first (SPEC §7.3): its divergencias-rf
 * counts; then, before it is `concluido`, a 409 unless the caller asked for a partial answer.
 */
export async function answerOnlyWhole(service: TarefasService, reply: FastifyReply, lote: LoteRecord, parcial: boolean): Promise<void> {
  const counts = await divergenciasCounts(service, lote);
  reply.header('lote-tarefas-concluidas', String(counts.concluida)).header('lote-tarefas-falhas', String(counts.falhou));
  if (lote.estado === 'concluido') return;
  if (!parcial) {
    reply.header('retry-after', RETRY_AFTER_S);
    throw new ConflictError(mensagens.loteNaoConcluido);
  }
  reply.header('lote-estado', lote.estado);
}
