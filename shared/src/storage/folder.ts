// The folder adapter: each request's files in its own folder under UPLOAD_DIR, under
// server-generated names. With a worker process, UPLOAD_DIR must be the same volume on both sides.
import { createWriteStream } from 'node:fs';
import { access, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StorageUnavailableError } from '../core/errors.js';
import type { JobData } from '../core/types.js';
import { filesOf, InvalidJobDataError, type RequestArea, type Storage, type WriteCounter } from './port.js';

/** Errors of the file system that mean "cannot store uploads now", not "bad request". */
// ENOTDIR / ENOENT: UPLOAD_DIR (or a parent) is not a folder, or vanished while a file was written.
const STORAGE_ERRORS = new Set(['ENOSPC', 'EACCES', 'EPERM', 'EROFS', 'EDQUOT', 'EMFILE', 'ENFILE', 'ENOTDIR', 'ENOENT', 'EIO']);

function storageError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code && STORAGE_ERRORS.has(code) ? new StorageUnavailableError({ cause: err }) : err;
}

export function createFolderStorage(uploadDir: string): Storage {
  const root = path.resolve(uploadDir);
  return {
    kind: 'folder',
    area: (id) => folderArea(root, id),
    checkJobData(data) {
      folderOf(data, root);
    },
    async inputsExist(data) {
      return exists(folderOf(data, root));
    },
    // The files are already local: the job reads and writes the shared folder itself.
    runWithLocalFiles: (data, work) => work(data),
    // Unchanged from before the bucket existed: a full disk answers 503 per request instead.
    isReady: async () => true,
    close() {},
  };
}

/**
 * Request folders are named `censo-<id>`: a process sweeping UPLOAD_DIR for what an earlier one
 * left removes only names of this form, never another program's files (SPEC §9), even when
 * UPLOAD_DIR is a folder others use too (/tmp).
 */
const AREA_FOLDER = /^censo-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const areaFolderName = (id: string): string => `censo-${id}`;

export const isAreaFolderName = (name: string): boolean => AREA_FOLDER.test(name);

function folderArea(root: string, id: string): RequestArea {
  const dir = path.join(root, areaFolderName(id));
  const file = (name: string) => path.join(dir, name);
  return {
    id,
    async open() {
      await mkdir(dir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
        throw storageError(err);
      });
    },
    ref: file,
    async write(name: string, source: Readable, counter: WriteCounter, signal: AbortSignal) {
      // 256 KiB buffered: with the default 16 KiB every socket chunk waited for its own disk write
      // before the next was read, and the upload ran at the speed of those round trips.
      const sink = createWriteStream(file(name), { flags: 'wx', mode: 0o600, highWaterMark: UPLOAD_BUFFER_BYTES });
      try {
        await pipeline(source, sink, { signal });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw storageError(err);
      } finally {
        counter.bytes = sink.bytesWritten;
      }
    },
    async read(name) {
      // Bounded by the file's size, the stream ends with its last chunk. Unbounded, it ends one
      // read later, when a read finds nothing; under a busy thread pool a client that hangs up as
      // soon as it has the whole body (curl, `Connection: close`) closed first, and its complete
      // answer was logged and counted as 499 (test/http/request-log.test.ts).
      const handle = await open(file(name)).catch((err: unknown) => {
        // Whatever keeps a stored file from being read is the storage's failure, never the request's (an ELOOP was a 500).
        throw new StorageUnavailableError({ cause: err });
      });
      const size = await handle.stat().then(
        (stats) => stats.size,
        async (err: unknown) => {
          await handle.close();
          throw storageError(err);
        },
      );
      if (size > 0) return handle.createReadStream({ start: 0, end: size - 1, highWaterMark: DOWNLOAD_BUFFER_BYTES });
      // `end` cannot name an empty range: an empty file is an already empty stream.
      await handle.close();
      return Readable.from([]);
    },
    async remove() {
      await rm(dir, { recursive: true, force: true });
    },
    async discard(names) {
      await Promise.all(names.map((name) => rm(file(name), { force: true })));
    },
  };
}

/** How much of an upload may wait for the disk (per file being written). */
export const UPLOAD_BUFFER_BYTES = 256 * 1024;

/** The request folder a job's files are in; each of them must be inside it, and it inside the root. */
function folderOf(data: JobData, root: string): string {
  const paths = filesOf(data);
  const folder = typeof data.resultPath === 'string' ? path.dirname(path.resolve(data.resultPath)) : '';
  const valid = paths.every((p) => typeof p === 'string' && isInside(root, path.resolve(p))) && folder !== root && isInside(root, folder);
  if (!valid) throw new InvalidJobDataError('paths must be inside UPLOAD_DIR');
  return folder;
}

function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * How much of a stored file is read at a time for an answer. With the default 64 KiB the 25 MB
 * answer of bench 3e took 124 ms to download against 19 ms from a bare server; 72 ms with this,
 * 48 ms with 1 MiB, which a slow client would hold per download (128 in flight: 128 MiB).
 */
export const DOWNLOAD_BUFFER_BYTES = 256 * 1024;
