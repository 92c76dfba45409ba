// An S3-compatible server for the storage tests: s3rver (a real S3 protocol implementation in
// Node) on loopback, with a bucket of its own, that a test can stop and start again on the same
// port and data folder to play a storage outage.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** s3rver accepts these; the service reads them from the standard AWS variables. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' } as const;

export interface TestS3 {
  readonly endpoint: string;
  readonly bucket: string;
  /** The settings a service needs to use this bucket (prefix: a test's own key prefix). */
  env(prefix: string): Record<string, string>;
  /** Every key in the bucket under `prefix`. */
  keys(prefix?: string): Promise<string[]>;
  stop(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startTestS3(bucket = 'censo-test'): Promise<TestS3> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'censo-s3rver-'));
  let port = 0;
  let server: S3rver | null = null;
  const start = async () => {
    const instance = new S3rver({ port, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
    const address = await instance.run();
    port = address.port;
    server = instance;
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: S3_CREDENTIALS.AWS_SECRET_ACCESS_KEY },
  });
  const stop = async () => {
    await server?.close();
    server = null;
  };
  return {
    endpoint,
    bucket,
    env: (prefix) => ({ S3_BUCKET: bucket, S3_ENDPOINT: endpoint, S3_PREFIX: prefix, ...S3_CREDENTIALS }),
    async keys(prefix = '') {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        for (const item of page.Contents ?? []) keys.push(item.Key!);
        token = page.NextContinuationToken;
      } while (token);
      return keys;
    },
    stop,
    start,
    async dispose() {
      client.destroy();
      await stop();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
