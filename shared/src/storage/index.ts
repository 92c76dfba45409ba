// Where a request's files live (SPEC §6): the UPLOAD_DIR folder, or an S3-compatible bucket when
// S3_BUCKET is set. The S3 SDK is loaded only then, so the CLI and folder deployments never pay for it.
import type { Config } from '../runtime/config.js';
import type { Logger } from '../runtime/logger.js';
import { createFolderStorage } from './folder.js';
import type { Storage } from './port.js';
import { tracingEnabled } from '../runtime/telemetry.js';
import { tracedStorage } from './traced.js';

export * from './port.js';
export { areaFolderName, createFolderStorage, isAreaFolderName, UPLOAD_BUFFER_BYTES } from './folder.js';
export { storageExecutor } from './executor.js';

/** A job's scratch folder older than its deadline by this much belongs to no running job. */
const STALE_MARGIN_MS = 60_000;

/** `log`: where the bucket's failures that no request sees are reported (S3 only). */
export async function createStorage(config: Config, log: Pick<Logger, 'warn' | 'debug'>): Promise<Storage> {
  const storage = await openStorage(config, log);
  // Spans only when tracing is on: off, the storage is the adapter itself, nothing in between.
  return tracingEnabled() ? tracedStorage(storage) : storage;
}

async function openStorage(config: Config, log: Pick<Logger, 'warn' | 'debug'>): Promise<Storage> {
  if (config.storage.kind === 'folder') return createFolderStorage(config.uploadDir);
  const { createS3Storage, removeStaleScratch } = await import('./s3.js');
  // A worker killed mid-job leaves its local copies behind; none can be in use past its deadline.
  await removeStaleScratch(config.uploadDir, config.jobTimeoutMs + STALE_MARGIN_MS, log);
  return createS3Storage(config.storage, config.uploadDir, log, { retentionMs: config.loteMaxMs + config.resultTtlMs });
}
