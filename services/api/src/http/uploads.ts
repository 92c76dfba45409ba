// Receives the multipart upload straight into the storage (SPEC §6: the UPLOAD_DIR folder or an
// S3 bucket), one part at a time, under server-generated names in a per-request area (never the
// client's file name), with the 25 MB limit enforced while streaming. The area is removed when
// the response is over, whatever happened (success, error, timeout, client gone): see
// `withRequestArea`.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  FileTooLargeError,
  UploadTimeoutError,
  badInput,
  type RequestArea,
  type RetornoFormat,
  type Storage,
  type StoredFile,
  type StoredRetorno,
} from '@censo/shared';
import { annotateRequestLog } from './request-annotations.js';
import { clientFileName } from './client-file-name.js';
import { noteUploadedFile } from '../auth/access-log.js';
import { digesting } from './file-digest.js';
import { watchUploadBody, type UploadDeadlineOptions } from './upload-deadline.js';

export const MAX_FILE_BYTES = 25 * 1024 * 1024;

/** Busboy limits: enough for the two files and a few harmless text fields, nothing more. */
export const MULTIPART_LIMITS = {
  fileSize: MAX_FILE_BYTES,
  files: 4,
  fields: 16,
  fieldSize: 64 * 1024,
  parts: 24,
  headerPairs: 64,
} as const;

export type UploadField = 'retorno' | 'txt';

export interface ReceivedFiles {
  readonly retorno: StoredRetorno;
  readonly txt: StoredFile | null;
  /** The txt's name as the client sent it: data for a download's name, never a path. */
  readonly txtName: string | null;
  /** The retorno's name as the client sent it (data, never a path). */
  readonly retornoName: string;
  /** SHA-256 (hex) of each file as received (an Idempotency-Key compares requests by them). */
  readonly sha256: { readonly retorno: string; readonly txt: string | null };
  /** Each file's size in bytes, as received. */
  readonly bytes: { readonly retorno: number; readonly txt: number | null };
  /** The text fields asked for (`textFields`), as sent. */
  readonly fields: Readonly<Record<string, string>>;
}

export interface ReceiveOptions {
  /** Text fields to keep (the others are ignored). */
  readonly textFields?: readonly string[];
}

/**
 * Runs `work` with a fresh request area and removes the area once both the work has settled and
 * the response is closed (sent, failed or abandoned). `signal` aborts when the client goes away
 * before the response is complete, so queued or running jobs can be dropped.
 */
export async function withRequestArea<T>(
  storage: Storage,
  request: FastifyRequest,
  reply: FastifyReply,
  work: (area: RequestArea, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const area = storage.area(randomUUID());
  const clientGone = new AbortController();
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));

  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) clientGone.abort(new Error('client closed the connection'));
    // What cannot be removed now is left to the bucket's lifecycle rule (README) or the folder's
    // next cleanup; the log says which.
    void settled.then(() =>
      area.remove().catch((err: unknown) => request.log.error({ err, uploadId: area.id }, 'could not remove upload files')),
    );
  });

  try {
    await area.open();
    return await work(area, clientGone.signal);
  } finally {
    settle();
  }
}

function extensionOf(filename: string): string {
  return path.extname(filename).slice(1).toLowerCase();
}

function retornoFormat(filename: string): RetornoFormat | null {
  const ext = extensionOf(filename);
  return ext === 'json' || ext === 'xlsx' ? ext : null;
}

/**
 * Streams the expected file fields of a multipart request into `folder`. Text fields are
 * ignored; any other file field, a repeated field, a wrong extension or an oversized file is
 * rejected as soon as it is seen; a body late past `deadline` is a 408.
 */
export async function receiveFiles(
  request: FastifyRequest,
  area: RequestArea,
  accepted: readonly UploadField[],
  deadline: UploadDeadlineOptions,
  options: ReceiveOptions = {},
): Promise<ReceivedFiles> {
  return underDeadline(request, deadline, () => receiveParts(request, area, accepted, options));
}

/** Reads a multipart body with `read` under its deadline: a body late past it is a 408. */
async function underDeadline<T>(request: FastifyRequest, deadline: UploadDeadlineOptions, read: () => Promise<T>): Promise<T> {
  if (!request.isMultipart()) throw badInput.notMultipart();
  let expired = false;
  const stopWatching = watchUploadBody(request.raw, deadline, () => {
    expired = true;
    // @fastify/multipart listens for 'error' on the request: it stops parsing, fails the part
    // being written and ends the iteration, so the loop below unwinds at once.
    if (request.raw.listenerCount('error') > 0) request.raw.emit('error', new UploadTimeoutError());
  });
  try {
    return await read();
  } catch (err) {
    throw expired ? new UploadTimeoutError() : err;
  } finally {
    stopWatching();
  }
}

/** Files one request may send to a batch's divergencias-rf route (SPEC §7.3, several returns per request). */
export const MAX_RETORNOS_POR_ENVIO = 100;

/** Busboy limits of that route: its files and their `referencia` fields. */
const BATCH_MULTIPART_LIMITS = {
  ...MULTIPART_LIMITS,
  files: MAX_RETORNOS_POR_ENVIO,
  fields: MAX_RETORNOS_POR_ENVIO + 8,
  parts: 2 * MAX_RETORNOS_POR_ENVIO + 8,
} as const;

/** One return of a request that carries several, stored in its own task's area. */
export interface ReceivedReturn {
  readonly area: RequestArea;
  readonly retorno: StoredRetorno;
  /** Its name as the client sent it (data, never a path). */
  readonly retornoName: string;
  readonly sha256: string;
  readonly bytes: number;
  /** The `referencia` sent with it (the i-th field goes with the i-th file), or null. */
  readonly referencia: string | null;
}

/**
 * The returns of a batch upload (`retorno` parts, up to MAX_RETORNOS_POR_ENVIO), each streamed
 * into the area `areaFor` opens for it; `admit` is called before each file after the first, so
 * that every file counts against the backlog as it arrives (it throws to refuse the request).
 * The i-th `referencia` text field goes with the i-th file; with several files, every file has
 * one or none has. Any refusal refuses the whole request: the caller removes the areas.
 */
export async function receiveReturns(
  request: FastifyRequest,
  areaFor: () => Promise<RequestArea>,
  deadline: UploadDeadlineOptions,
  admit: () => void,
): Promise<ReceivedReturn[]> {
  return underDeadline(request, deadline, async () => {
    const files: Omit<ReceivedReturn, 'referencia'>[] = [];
    const referencias: string[] = [];
    try {
      for await (const part of request.parts({ limits: BATCH_MULTIPART_LIMITS })) {
        if (part.type !== 'file') {
          if (part.fieldname === 'referencia' && typeof part.value === 'string') referencias.push(part.value);
          continue;
        }
        if (part.fieldname !== 'retorno') throw badInput.unexpectedField(part.fieldname);
        const filename = clientFileName(part.filename);
        const format = retornoFormat(filename);
        if (!format) throw badInput.wrongExtension('retorno');
        if (files.length > 0) admit();
        const area = await areaFor();
        const name = `retorno.${format}`;
        const stored = await storePart(request, area, name, 'retorno', part);
        files.push({ area, retorno: { path: area.ref(name), format }, retornoName: filename, ...stored });
      }
    } catch (err) {
      throw (err as { code?: string }).code === 'FST_FILES_LIMIT' ? badInput.retornosDemais(MAX_RETORNOS_POR_ENVIO) : err;
    }
    if (files.length === 0) throw badInput.fileMissing('retorno');
    // One file keeps the rule it always had: its referencia wherever it is (the last one sent).
    if (files.length === 1) return [{ ...files[0]!, referencia: referencias.at(-1) ?? null }];
    if (referencias.length !== 0 && referencias.length !== files.length) throw badInput.referenciasPorArquivo();
    return files.map((file, i) => ({ ...file, referencia: referencias[i] ?? null }));
  });
}

/** Streams one file part into `area` under `name`, cut at the size limit; its digest and size. */
async function storePart(
  request: FastifyRequest,
  area: RequestArea,
  name: string,
  field: UploadField,
  part: { readonly file: Readable & { truncated?: boolean } },
): Promise<{ sha256: string; bytes: number }> {
  // Past the limit busboy only ends the stream early: stop the write there, so the storage
  // never completes a cut file (an S3 multipart upload is aborted, not left as parts).
  const cut = new AbortController();
  part.file.once('limit', () => cut.abort(new FileTooLargeError()));
  const counter = { bytes: 0 };
  const digest = digesting(part.file); // for the access log (SPEC §8)
  try {
    await area.write(name, digest.stream, counter, cut.signal);
  } finally {
    // Counted even when the file is then refused (413, storage): it still cost the bytes.
    const before = request.logFields?.bytes?.[field] ?? 0;
    annotateRequestLog(request, { bytes: { ...request.logFields?.bytes, [field]: before + counter.bytes } });
  }
  // The 'limit' event has normally cut the write already; a truncated stream that still ended
  // normally (the flag is busboy's other signal) is refused all the same.
  if (part.file.truncated) throw new FileTooLargeError();
  const sha256 = digest.sha256();
  noteUploadedFile(request, { field, sha256, bytes: counter.bytes });
  return { sha256, bytes: counter.bytes };
}

async function receiveParts(
  request: FastifyRequest,
  area: RequestArea,
  accepted: readonly UploadField[],
  options: ReceiveOptions,
): Promise<ReceivedFiles> {
  let retorno: StoredRetorno | null = null;
  let txt: StoredFile | null = null;
  let txtName: string | null = null;
  let retornoName = '';
  const digests = new Map<string, string>();
  const sizes = new Map<string, number>();
  const fields: Record<string, string> = {};

  for await (const part of request.parts({ limits: MULTIPART_LIMITS })) {
    if (part.type !== 'file') {
      if (options.textFields?.includes(part.fieldname) && typeof part.value === 'string') fields[part.fieldname] = part.value;
      continue;
    }
    const field = part.fieldname;
    if (!(accepted as readonly string[]).includes(field)) throw badInput.unexpectedField(field);
    if ((field === 'retorno' && retorno) || (field === 'txt' && txt)) {
      throw badInput.duplicateField(field);
    }

    let name: string;
    const filename = clientFileName(part.filename);
    if (field === 'retorno') {
      const format = retornoFormat(filename);
      if (!format) throw badInput.wrongExtension('retorno');
      name = `retorno.${format}`;
      retorno = { path: area.ref(name), format };
      retornoName = filename;
    } else {
      if (extensionOf(filename) !== 'txt') throw badInput.wrongExtension('txt');
      name = 'censo.txt';
      txt = { path: area.ref(name) };
      txtName = filename;
    }

    const stored = await storePart(request, area, name, field as UploadField, part);
    digests.set(field, stored.sha256);
    sizes.set(field, stored.bytes);
  }

  if (!retorno) throw badInput.fileMissing('retorno');
  if (accepted.includes('txt') && !txt) throw badInput.fileMissing('txt');
  const sha256 = { retorno: digests.get('retorno') ?? '', txt: txt ? (digests.get('txt') ?? '') : null };
  const bytes = { retorno: sizes.get('retorno') ?? 0, txt: txt ? (sizes.get('txt') ?? 0) : null };
  return { retorno, txt, txtName, retornoName, sha256, bytes, fields };
}
