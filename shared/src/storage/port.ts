// The storage port: where one request's files live between the upload and the answer (SPEC §6).
// Two adapters: the UPLOAD_DIR folder (one host, or a volume every host mounts) and an
// S3-compatible bucket (API and workers on different hosts, no shared disk). Job data carries
// references into the storage (paths or object keys), never bytes.
import type { Readable } from 'node:stream';
import type { JobData, JobResult } from '../core/types.js';

export interface Storage {
  readonly kind: 'folder' | 's3';
  /** The files of one request; `id` is also its job's id. */
  area(id: string): RequestArea;
  /** Job data comes from Redis: throws InvalidJobDataError unless every reference is a file of one area of this storage. */
  checkJobData(data: JobData): void;
  /** Whether a job's inputs are still stored: the API removes them when its request ends. */
  inputsExist(data: JobData): Promise<boolean>;
  /**
   * Runs `work` with the job's files as local paths, and stores its result where the API reads
   * it. Throws InputsGoneError when the inputs disappeared (the request ended), and
   * StorageUnavailableError when the storage cannot be reached.
   */
  runWithLocalFiles(data: JobData, work: (local: JobData) => Promise<JobResult>, signal?: AbortSignal): Promise<JobResult>;
  /** For /readyz (the bucket only): whether it answers. The folder says yes; a full disk is a 503 per request. */
  isReady(): Promise<boolean>;
  close(): void;
}

/** Bytes a write has taken from its source so far, set even when the write fails. */
export interface WriteCounter {
  bytes: number;
}

export interface RequestArea {
  readonly id: string;
  /** Prepares the area; StorageUnavailableError if it cannot. */
  open(): Promise<void>;
  /** The reference of one of the area's files, as job data carries it. */
  ref(name: string): string;
  /**
   * Streams `source` into the file `name`. Aborting `signal` stops the write and rejects with its
   * reason, leaving nothing behind once `remove()` has run; an error of `source` rejects with that
   * error; a storage failure rejects with StorageUnavailableError.
   */
  write(name: string, source: Readable, counter: WriteCounter, signal: AbortSignal): Promise<void>;
  /** A file's content (the job's result); StorageUnavailableError if it cannot be read. */
  read(name: string): Promise<Readable>;
  /** Removes every file of the area. Rejects with what could not be removed (for the log). */
  remove(): Promise<void>;
  /**
   * Removes only the files `names` (those missing are fine), even those of an area this process
   * did not write: an asynchronous task drops its upload once its job ends and keeps its result.
   */
  discard(names: readonly string[]): Promise<void>;
}

/** Job data that points outside the storage, or is not job data at all. */
export class InvalidJobDataError extends Error {
  constructor(reason: string) {
    super(`invalid job data: ${reason}`);
    this.name = 'InvalidJobDataError';
  }
}

/** The job's inputs are gone: its request has ended and the API removed them. */
export class InputsGoneError extends Error {
  constructor() {
    super('the job inputs are gone (its request has ended)');
    this.name = 'InputsGoneError';
  }
}

/**
 * Every file reference of job data that came from Redis, whatever shape it has (the adapters
 * check that they are theirs); InvalidJobDataError when it is not job data of a known kind.
 */
export function filesOf(data: JobData): unknown[] {
  const kind = (data as { kind?: unknown } | null)?.kind;
  if (kind !== 'divergencias' && kind !== 'retorno-rf' && kind !== 'censo-corrigido') throw new InvalidJobDataError('unknown kind');
  try {
    const files: unknown[] = [data.retorno.path, data.resultPath];
    if (data.kind !== 'divergencias') files.push(data.txt.path);
    // The batch lines go beside the result (batchLinesPath): only their leading fields are data.
    if (data.kind === 'divergencias' && data.batchLines !== undefined && !validLeading(data.batchLines)) {
      throw new InvalidJobDataError('batchLines must be a list of texts');
    }
    return files;
  } catch (err) {
    throw err instanceof InvalidJobDataError ? err : new InvalidJobDataError('a file is missing');
  }
}

function validLeading(leading: unknown): boolean {
  return Array.isArray(leading) && leading.length <= 8 && leading.every((field) => typeof field === 'string');
}

/** The same job with each file reference replaced by `map(reference)`. */
export function mapJobFiles(data: JobData, map: (ref: string) => string): JobData {
  const retorno = { ...data.retorno, path: map(data.retorno.path) };
  const resultPath = map(data.resultPath);
  return data.kind === 'divergencias'
    ? { ...data, retorno, resultPath }
    : { ...data, retorno, txt: { path: map(data.txt.path) }, resultPath };
}
