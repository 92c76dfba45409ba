// Where a request's files live (SPEC §6): the UPLOAD_DIR folder, or an S3-compatible bucket when
// S3_BUCKET is set. The S3 SDK is loaded only then, so the CLI and folder deployments never pay for it.
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { Config } from '../runtime/config.js';
import { createFolderStorage } from './folder.js';
import type { Storage } from './port.js';

export * from './port.js';
export { createFolderStorage } from './folder.js';
export { storageExecutor } from './executor.js';

export interface CreateStorageOptions {
  /** Extra S3 client settings (tests: a local server's credentials). */
  readonly s3Client?: S3ClientConfig;
}

export async function createStorage(config: Config, options: CreateStorageOptions = {}): Promise<Storage> {
  if (config.storage.kind === 'folder') return createFolderStorage(config.uploadDir);
  const { createS3Storage } = await import('./s3.js');
  return createS3Storage(config.storage, { scratchDir: config.uploadDir, client: options.s3Client });
}
