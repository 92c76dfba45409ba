// The S3 adapter (S3_BUCKET): API and workers on different hosts share a bucket instead of a disk.
// The API streams each uploaded file straight into a multipart upload (nothing on its own disk);
// a worker copies a job's inputs to its own scratch folder (the xlsx reader needs random access),
// runs the job there and uploads the result; the API streams the result object to the client and
// deletes every object of the request when the request ends. A bucket lifecycle rule (README)
// removes what a crash leaves behind.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectsCommand,
  GetBucketLifecycleConfigurationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  S3Client,
  type LifecycleRule,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { StorageUnavailableError } from '../core/errors.js';
import { outputsOf, type JobData } from '../core/types.js';
import type { StorageConfig } from '../runtime/config.js';
import type { Logger } from '../runtime/logger.js';
import { filesOf, InputsGoneError, InvalidJobDataError, mapJobFiles, type RequestArea, type Storage, type WriteCounter } from './port.js';

type S3Settings = Extract<StorageConfig, { kind: 's3' }>;

/**
 * S3's smallest multipart part. One part is buffered per file being uploaded (queueSize 1), so an
 * API process holds about this much per upload in flight: MAX_INFLIGHT_UPLOADS × 5 MiB at most.
 */
const PART_BYTES = 5 * 1024 * 1024;
const READY_TIMEOUT_MS = 2_000;
const LIFECYCLE_TIMEOUT_MS = 10_000;
const DAY_MS = 24 * 3_600_000;

// A request's objects are `<prefix><id>/<name>`: ids are the server's UUIDs, names its own.
const ID = '[A-Za-z0-9-]{1,64}';
const NAME = '[A-Za-z0-9._-]{1,64}';

function createS3Client(settings: S3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint === null ? {} : { endpoint: settings.endpoint, forcePathStyle: true }),
    // Checksums only where the API requires them: third-party servers (MinIO, Garage, older
    // releases) reject or ignore the SDK's newer default trailing checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A storage outage must become a 503 within seconds, not after the SDK's long retry ladder.
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 3_000, requestTimeout: 30_000 },
  });
}

/**
 * An abandoned multipart upload is aborted by lib-storage after the caller has already moved on
 * (done() settles at once on abort), so a failed AbortMultipartUpload would otherwise vanish: its
 * parts then stay in the bucket, billed and holding the file, until the lifecycle rule removes
 * them. Logged here, at the one place every abort goes through, with the key to remove by hand.
 */
function logFailedAborts(client: S3Client, log: Pick<Logger, 'warn'>): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        if (context.commandName === 'AbortMultipartUploadCommand') {
          const { Key: key, UploadId: uploadId } = args.input as { Key?: string; UploadId?: string };
          log.warn({ key, uploadId, err }, 'could not abort a multipart upload');
        }
        throw err;
      }
    },
    { step: 'initialize', name: 'censoLogFailedAborts' },
  );
}

/** mkdtemp(`<request id>-`) in runWithLocalFiles: a UUID and six characters. */
const SCRATCH_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[A-Za-z0-9]{6}$/;

/**
 * Removes the jobs' scratch folders (`<area>-XXXXXX`) last changed more than `olderThanMs` ago:
 * what a process killed mid-job left. Several workers may share the folder, so only folders too
 * old to belong to a running job go. Failures are logged: a start is not refused for them.
 */
export async function removeStaleScratch(scratchDir: string, olderThanMs: number, log: Pick<Logger, 'warn'>): Promise<number> {
  let removed = 0;
  try {
    const limit = Date.now() - olderThanMs;
    for (const entry of await readdir(scratchDir, { withFileTypes: true })) {
      // Only what runWithLocalFiles makes (mkdtemp of a request's id): UPLOAD_DIR may hold more.
      if (!entry.isDirectory() || !SCRATCH_NAME.test(entry.name)) continue;
      const dir = path.join(scratchDir, entry.name);
      const { mtimeMs } = await stat(dir);
      if (mtimeMs >= limit) continue;
      await rm(dir, { recursive: true, force: true });
      removed++;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ err, scratchDir }, 'could not remove stale scratch folders');
  }
  return removed;
}

/** A lifecycle rule that removes the service's objects sooner than it may still need them. */
export interface ShortRule {
  readonly id: string | null;
  readonly days: number;
}

/**
 * The enabled rules whose expiration reaches objects under `prefix` (`<prefix><id>/<name>`, no
 * tags) before `retentionMs`. S3 counts whole days from an object's creation; a rule with a
 * date expires everything from that date on, so it counts as the days left until then.
 */
export function shortLifecycleRules(rules: readonly LifecycleRule[], prefix: string, retentionMs: number, now: number): ShortRule[] {
  const short: ShortRule[] = [];
  for (const rule of rules) {
    if (rule.Status !== 'Enabled' || !rule.Expiration) continue;
    const filter = rule.Filter ?? {};
    // The service tags nothing: a rule that needs a tag never reaches its objects.
    if (filter.Tag || (filter.And?.Tags?.length ?? 0) > 0) continue;
    const rulePrefix = filter.Prefix ?? filter.And?.Prefix ?? rule.Prefix ?? '';
    // It reaches every object under the prefix, or some of them (a longer prefix inside it).
    if (!prefix.startsWith(rulePrefix) && !rulePrefix.startsWith(prefix)) continue;
    const { Days: days, Date: date } = rule.Expiration;
    const expiresAfterMs = days !== undefined ? days * DAY_MS : date ? Math.max(0, date.getTime() - now) : Infinity;
    if (expiresAfterMs < retentionMs) short.push({ id: rule.ID ?? null, days: Math.floor(expiresAfterMs / DAY_MS) });
  }
  return short;
}

/**
 * Reads the bucket's lifecycle configuration once, at start, and warns when a rule would delete
 * the service's objects before the retention ends: results of a batch would vanish while the API
 * still lists them (issue 34). A bucket that does not let the service read its configuration
 * (AccessDenied, NoSuchLifecycleConfiguration, a server without lifecycle support) is not an
 * error: the service needs no such permission, so that is a debug line.
 */
async function checkLifecycle(
  client: S3Client,
  settings: S3Settings,
  retentionMs: number,
  log: Pick<Logger, 'warn' | 'debug'>,
): Promise<void> {
  const { bucket, prefix } = settings;
  let rules: LifecycleRule[];
  try {
    const out = await client.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }), {
      abortSignal: AbortSignal.timeout(LIFECYCLE_TIMEOUT_MS),
    });
    rules = out.Rules ?? [];
  } catch (err) {
    const code = (err as { name?: string } | null)?.name ?? 'unknown';
    log.debug({ bucket, code }, 'bucket lifecycle not readable: retention not checked against it');
    return;
  }
  const retentionHours = Math.round(retentionMs / 3_600_000);
  const short = shortLifecycleRules(rules, prefix, retentionMs, Date.now());
  for (const rule of short) {
    log.warn(
      { bucket, prefix, rule: rule.id, expirationDays: rule.days, retentionHours },
      `the bucket's lifecycle rule expires objects after ${rule.days} days, sooner than the ${retentionHours} h (LOTE_MAX_HOURS + RESULT_TTL_HOURS) the service keeps them: results may vanish while still listed`,
    );
  }
  if (short.length === 0) log.debug({ bucket, prefix, rules: rules.length, retentionHours }, 'bucket lifecycle leaves the retention whole');
}

export interface S3StorageOptions {
  /**
   * How long the service may still need an object it wrote (LOTE_MAX_HOURS + RESULT_TTL_HOURS).
   * When set, the bucket's lifecycle rules are checked against it in the background.
   */
  readonly retentionMs?: number;
}

/** `scratchDir`: a worker's folder for its jobs' local copies (its own UPLOAD_DIR). */
export function createS3Storage(
  settings: S3Settings,
  scratchDir: string,
  log: Pick<Logger, 'warn' | 'debug'>,
  options: S3StorageOptions = {},
): Storage {
  const client = createS3Client(settings);
  logFailedAborts(client, log);
  // In the background: a start never waits for the bucket (readiness says whether it answers).
  if (options.retentionMs !== undefined) void checkLifecycle(client, settings, options.retentionMs, log);
  const { bucket, prefix } = settings;
  const keyPattern = new RegExp(`^${escapeRegExp(prefix)}(${ID})/${NAME}$`);

  async function deleteKeys(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const out = await client
      .send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }))
      .catch((err: unknown) => {
        throw new Error(`could not delete ${keys.join(', ')}`, { cause: err });
      });
    const failed = out.Errors ?? [];
    if (failed.length > 0) throw new Error(`could not delete ${failed.map((e) => `${e.Key} (${e.Code})`).join(', ')}`);
  }

  async function exists(key: string): Promise<boolean> {
    try {
      await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw storageError(err);
    }
  }

  async function download(key: string, target: string, signal: AbortSignal | undefined): Promise<void> {
    let body: Readable;
    try {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
      body = out.Body as Readable;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw isNotFound(err) ? new InputsGoneError() : storageError(err);
    }
    await pipeline(body, createWriteStream(target, { flags: 'wx', mode: 0o600 }), ...(signal ? [{ signal }] : [])).catch((err: unknown) => {
      throw signal?.aborted ? signal.reason : storageError(err);
    });
  }

  async function upload(key: string, body: Readable, signal: AbortSignal | undefined): Promise<void> {
    const upload = new Upload({
      client,
      params: { Bucket: bucket, Key: key, Body: body },
      queueSize: 1,
      partSize: PART_BYTES,
      leavePartsOnError: false,
    });
    // abort() alone only settles done(): the upload sends AbortMultipartUpload once its reader of
    // the body returns, which waits for the body's next chunk, and a cut upload's source may
    // never give one. Ending the body from here makes that happen now.
    const abort = () => {
      void upload.abort();
      body.destroy(new Error('upload aborted'));
    };
    signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }

  function area(id: string): RequestArea {
    const names = new Set<string>();
    const key = (name: string) => {
      names.add(name);
      return `${prefix}${id}/${name}`;
    };
    return {
      id,
      // Nothing to prepare: a bucket has no folders.
      async open() {},
      ref: key,
      async write(name: string, source: Readable, counter: WriteCounter, signal: AbortSignal) {
        // The upload reads the source through this counting stream, which can be ended at once
        // (an async generator could not be while it awaits the source), and an error of the
        // source (the client went away, a malformed part) is told apart from one of the storage.
        const body = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            counter.bytes += chunk.length;
            done(null, chunk);
          },
        });
        let sourceError: { error: unknown } | null = null;
        source.once('error', (error) => (sourceError = { error }));
        // Errors surface through the upload, which reads `body`.
        pipeline(source, body).catch(() => undefined);
        try {
          await upload(key(name), body, signal);
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          if (sourceError !== null) throw (sourceError as { error: unknown }).error;
          throw storageError(err);
        } finally {
          // A failed upload stops reading: release the source rather than leave it paused.
          if (!body.readableEnded) body.destroy();
        }
      },
      async read(name) {
        try {
          const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key(name) }));
          return out.Body as Readable;
        } catch (err) {
          throw storageError(err);
        }
      },
      async remove() {
        await deleteKeys([...names].map((name) => `${prefix}${id}/${name}`));
      },
      async discard(discarded) {
        await deleteKeys(discarded.map((name) => `${prefix}${id}/${name}`));
      },
    };
  }

  /** The request id all of a job's keys share; InvalidJobDataError unless they are keys of one area. */
  function areaOf(data: JobData): string {
    const ids = new Set<string>();
    for (const ref of filesOf(data)) {
      const match = typeof ref === 'string' ? keyPattern.exec(ref) : null;
      if (!match) throw new InvalidJobDataError(`keys must be objects of one request under "${prefix}"`);
      ids.add(match[1]!);
    }
    if (ids.size !== 1) throw new InvalidJobDataError('keys of more than one request');
    return [...ids][0]!;
  }

  return {
    kind: 's3',
    area,
    checkJobData(data) {
      areaOf(data);
    },
    async inputsExist(data) {
      return exists(data.retorno.path);
    },
    async runWithLocalFiles(data, work, signal) {
      await mkdir(scratchDir, { recursive: true, mode: 0o700 }).catch((err: unknown) => {
        throw storageError(err);
      });
      const dir = await mkdtemp(path.join(scratchDir, `${areaOf(data)}-`));
      try {
        const local = mapJobFiles(data, (ref) => path.join(dir, path.posix.basename(ref)));
        const inputs = [[data.retorno.path, local.retorno.path]];
        if (data.kind !== 'divergencias' && local.kind !== 'divergencias') inputs.push([data.txt.path, local.txt.path]);
        await Promise.all(inputs.map(([from, to]) => download(from!, to!, signal)));
        const result = await work(local);
        if (!result.ok) return result;
        // The result last: a task is concluded by its result, so what it reads beside it is there.
        const keys = outputsOf(data);
        const files = outputsOf(local);
        for (const [key, file] of keys.map((key, i) => [key, files[i]!] as const).reverse()) {
          await upload(key, createReadStream(file), signal).catch((err: unknown) => {
            throw signal?.aborted ? signal.reason : storageError(err);
          });
        }
        // The request may have ended while the job ran, and removed its objects before these
        // existed: remove them now rather than leave them to the lifecycle rule.
        if (!(await exists(data.retorno.path))) await deleteKeys(keys);
        return result;
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    async isReady() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal: AbortSignal.timeout(READY_TIMEOUT_MS) });
        return true;
      } catch {
        return false;
      }
    },
    close() {
      client.destroy();
    },
  };
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}

/** Anything the storage answered or failed with, for the client: 503, with the cause for the log. */
function storageError(err: unknown): unknown {
  if (err instanceof StorageUnavailableError || (err as Error | null)?.name === 'AbortError') return err;
  return new StorageUnavailableError({ cause: err });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
