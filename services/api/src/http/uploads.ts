// Receives the multipart upload straight to disk, one part at a time, under server-generated
// names inside a per-request folder (never the client's file name), with the 25 MB limit
// enforced while streaming. The folder is removed when the response is over, whatever happened
// (success, error, timeout, client gone): see `withUploadFolder`.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  FileTooLargeError,
  StorageUnavailableError,
  UploadTimeoutError,
  badInput,
  type RetornoFormat,
  type StoredFile,
  type StoredRetorno,
} from '@censo/shared';
import { annotateRequestLog } from '../plugins/request-log.js';
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

export interface UploadFolder {
  readonly id: string;
  readonly dir: string;
  file(name: string): string;
}

export interface ReceivedFiles {
  readonly retorno: StoredRetorno;
  readonly txt: StoredFile | null;
  /** The txt's name as the client sent it: data for a download's name, never a path. */
  readonly txtName: string | null;
}

/** Errors of the file system that mean "cannot store uploads now", not "bad request". */
// ENOTDIR / ENOENT: UPLOAD_DIR (or a parent) is not a folder, or vanished while a file was written.
const STORAGE_ERRORS = new Set(['ENOSPC', 'EACCES', 'EPERM', 'EROFS', 'EDQUOT', 'EMFILE', 'ENFILE', 'ENOTDIR', 'ENOENT', 'EIO']);

function storageError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code && STORAGE_ERRORS.has(code) ? new StorageUnavailableError({ cause: err }) : err;
}

/**
 * Runs `work` with a fresh upload folder and removes the folder once both the work has settled
 * and the response is closed (sent, failed or abandoned). `signal` aborts when the client goes
 * away before the response is complete, so queued or running jobs can be dropped.
 */
export async function withUploadFolder<T>(
  uploadDir: string,
  request: FastifyRequest,
  reply: FastifyReply,
  work: (folder: UploadFolder, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const id = randomUUID();
  const dir = path.join(uploadDir, id);
  const folder: UploadFolder = { id, dir, file: (name) => path.join(dir, name) };
  const clientGone = new AbortController();
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));

  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) clientGone.abort(new Error('client closed the connection'));
    void settled.then(() =>
      rm(dir, { recursive: true, force: true }).catch((err: unknown) =>
        request.log.error({ err, uploadId: id }, 'could not remove upload folder'),
      ),
    );
  });

  try {
    await mkdir(dir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
      throw storageError(err);
    });
    return await work(folder, clientGone.signal);
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
  folder: UploadFolder,
  accepted: readonly UploadField[],
  deadline: UploadDeadlineOptions,
): Promise<ReceivedFiles> {
  if (!request.isMultipart()) throw badInput.notMultipart();
  let expired = false;
  const stopWatching = watchUploadBody(request.raw, deadline, () => {
    expired = true;
    // @fastify/multipart listens for 'error' on the request: it stops parsing, fails the part
    // being written and ends the iteration, so the loop below unwinds at once.
    if (request.raw.listenerCount('error') > 0) request.raw.emit('error', new UploadTimeoutError());
  });
  try {
    return await receiveParts(request, folder, accepted);
  } catch (err) {
    throw expired ? new UploadTimeoutError() : err;
  } finally {
    stopWatching();
  }
}

async function receiveParts(request: FastifyRequest, folder: UploadFolder, accepted: readonly UploadField[]): Promise<ReceivedFiles> {
  let retorno: StoredRetorno | null = null;
  let txt: StoredFile | null = null;
  let txtName: string | null = null;

  for await (const part of request.parts({ limits: MULTIPART_LIMITS })) {
    if (part.type !== 'file') continue;
    const field = part.fieldname;
    if (!(accepted as readonly string[]).includes(field)) throw badInput.unexpectedField(field);
    if ((field === 'retorno' && retorno) || (field === 'txt' && txt)) {
      throw badInput.duplicateField(field);
    }

    let target: string;
    if (field === 'retorno') {
      const format = retornoFormat(part.filename);
      if (!format) throw badInput.wrongExtension('retorno');
      target = folder.file(`retorno.${format}`);
      retorno = { path: target, format };
    } else {
      if (extensionOf(part.filename) !== 'txt') throw badInput.wrongExtension('txt');
      target = folder.file('censo.txt');
      txt = { path: target };
      txtName = part.filename;
    }

    const sink = createWriteStream(target, { flags: 'wx', mode: 0o600 });
    try {
      await pipeline(part.file, sink).catch((err: unknown) => {
        throw storageError(err);
      });
    } finally {
      // Counted even when the file is then refused (413, storage): it still cost the bytes.
      annotateRequestLog(request, { bytes: { ...request.logFields?.bytes, [field]: sink.bytesWritten } });
    }
    // A size-limited busboy stream ends normally, just shorter: the flag is the only signal.
    if (part.file.truncated) throw new FileTooLargeError();
  }

  if (!retorno) throw badInput.fileMissing('retorno');
  if (accepted.includes('txt') && !txt) throw badInput.fileMissing('txt');
  return { retorno, txt, txtName };
}
