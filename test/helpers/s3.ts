// An S3-compatible server for the storage tests: s3rver (a real S3 protocol implementation in
// Node) on loopback, with a bucket of its own, that a test can stop and start again on the same
// port and data folder to play a storage outage. A recording proxy in front of it keeps the
// method and URL of every request, for what s3rver cannot show (it keeps an aborted multipart
// upload's parts on disk, so only the AbortMultipartUpload request proves the abort).
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** s3rver accepts these; the service reads them from the standard AWS variables. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' } as const;

export interface S3Request {
  readonly method: string;
  readonly url: string;
}

export interface TestS3 {
  readonly endpoint: string;
  /** Every request the service sent, in order. */
  readonly requests: S3Request[];
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
  const requests: S3Request[] = [];
  let s3rverPort = 0;
  let proxyPort = 0;
  let server: S3rver | null = null;
  let proxy: http.Server | null = null;
  const start = async () => {
    const instance = new S3rver({
      port: s3rverPort,
      address: '127.0.0.1',
      silent: true,
      directory,
      configureBuckets: [{ name: bucket, configs: [] }],
    });
    s3rverPort = (await instance.run()).port;
    server = instance;
    const target = s3rverPort;
    const front = http.createServer((req, res) => {
      requests.push({ method: req.method ?? '', url: req.url ?? '' });
      const upstream = http.request(
        { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => front.listen(proxyPort, '127.0.0.1', resolve));
    proxyPort = (front.address() as AddressInfo).port;
    proxy = front;
  };
  await start();
  const endpoint = `http://127.0.0.1:${proxyPort}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: S3_CREDENTIALS.AWS_SECRET_ACCESS_KEY },
  });
  /** Connections refused from now on, open ones cut, as when the storage host goes away. */
  const stop = async () => {
    const front = proxy;
    proxy = null;
    if (front) {
      const closed = new Promise((resolve) => front.close(resolve));
      front.closeAllConnections();
      await closed;
    }
    await server?.close();
    server = null;
  };
  return {
    endpoint,
    requests,
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
