// S3 storage (S3_BUCKET): when a multipart upload is abandoned (the client left, a limit or a
// deadline cut it) and the storage then refuses or fails the AbortMultipartUpload, its parts stay
// in the bucket (billed, holding personal data) until the lifecycle rule: that is logged at warn
// with the key, so an operator can find and remove them. A real s3rver behind a proxy that fails
// exactly the abort requests.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createStorage, loadConfig, type Storage } from '@censo/shared';
import { S3_CREDENTIALS, startTestS3, type TestS3 } from '../helpers/s3.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const MiB = 1024 * 1024;

let s3: TestS3;
let failing: http.Server;
let failingUrl: string;
let dir: string;
const aborts: string[] = [];

beforeAll(async () => {
  s3 = await startTestS3();
  // The storage reads its credentials where any AWS client does.
  Object.assign(process.env, S3_CREDENTIALS);
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-s3-abort-'));
  const upstream = new URL(s3.endpoint);
  // Forwards everything to s3rver, except AbortMultipartUpload (DELETE …?uploadId=…), which it
  // answers 500 as a storage that is failing would.
  failing = http.createServer((req, res) => {
    const url = req.url ?? '';
    if (req.method === 'DELETE' && /[?&]uploadId=/.test(url)) {
      aborts.push(url);
      req.resume();
      res.writeHead(500, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0"?><Error><Code>InternalError</Code><Message>storage failing</Message></Error>');
      return;
    }
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
  failingUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
});

afterAll(async () => {
  failing?.closeAllConnections();
  await new Promise((resolve) => failing?.close(resolve));
  await s3?.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** A storage on the failing proxy, and the JSON lines it logs. */
async function storageWithLog(): Promise<{ storage: Storage; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const config = loadConfig({ ...s3.env(`abort-${randomUUID()}/`), S3_ENDPOINT: failingUrl, UPLOAD_DIR: dir, LOG_LEVEL: 'info' });
  const logger = createLogger(
    config,
    { service: 'test' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { storage: await createStorage(config, logger), lines };
}

/** An upload whose first 5 MiB part has gone out, then cut by its request's signal. */
async function abandonedUpload(storage: Storage): Promise<string> {
  const area = storage.area(randomUUID());
  const source = new PassThrough();
  const controller = new AbortController();
  const counter = { bytes: 0 };
  const written = area.write('retorno.xlsx', source, counter, controller.signal);
  written.catch(() => undefined);
  // More than one part, so the upload is a multipart one; then the client stalls.
  source.write(Buffer.alloc(6 * MiB, 0x41));
  await waitFor(() => counter.bytes >= 6 * MiB, { what: 'the first part to be read' });
  const before = aborts.length;
  await waitFor(() => s3.requests.some((r) => r.method === 'PUT' && /[?&]partNumber=1/.test(r.url)), {
    timeoutMs: onThisMachine(10_000),
    what: 'the first part to reach the bucket',
  });
  controller.abort(new Error('client gone'));
  await expect(written).rejects.toThrow('client gone');
  await waitFor(() => aborts.length > before, { timeoutMs: onThisMachine(10_000), what: 'the AbortMultipartUpload request' });
  return area.ref('retorno.xlsx');
}

describe('a multipart upload whose abort fails', () => {
  it(
    'is logged at warn with its key and upload id',
    async () => {
      const { storage, lines } = await storageWithLog();
      try {
        const key = await abandonedUpload(storage);
        await waitFor(() => lines.some((l) => l.msg === 'could not abort a multipart upload'), {
          timeoutMs: onThisMachine(10_000),
          what: 'the warning',
        });
        const line = lines.find((l) => l.msg === 'could not abort a multipart upload')!;
        expect(line).toMatchObject({ level: 40, key, uploadId: expect.any(String) });
        expect(JSON.stringify(line.err)).toMatch(/storage failing|InternalError/);
      } finally {
        storage.close();
      }
    },
    onThisMachine(30_000),
  );
});
