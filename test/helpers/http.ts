// Black-box HTTP helpers: the real app on an ephemeral port, real multipart over a socket.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Writable } from 'node:stream';
import { createLogger, loadConfig, type Config } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { onThisMachine } from './deadline.js';

export const API_KEY = 'test-key';

export interface TestServer extends RunningServer {
  readonly config: Config;
  readonly uploadDir: string;
  dispose(): Promise<void>;
}

/**
 * Starts the whole service (embedded unless env says otherwise) on 127.0.0.1, port 0; `log`
 * receives its log lines (LOG_LEVEL in env; silent by default).
 */
export async function startTestServer(env: Record<string, string> = {}, log?: Writable): Promise<TestServer> {
  const uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-test-uploads-'));
  const config = loadConfig({
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    UPLOAD_DIR: uploadDir,
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '2',
    // The access log (SPEC §8) is not the subject of most tests; signin tests set a file.
    ACCESS_LOG: '/dev/null',
    ...env,
  });
  const server = await startServer(config, 'all', log && createLogger(config, { service: 'censo-api', role: 'all' }, log));
  return {
    ...server,
    config,
    uploadDir,
    async dispose() {
      await server.close();
      await rm(uploadDir, { recursive: true, force: true });
    },
  };
}

export interface UploadFile {
  readonly field: string;
  /** A path to read, or the content itself. */
  readonly path?: string;
  readonly content?: string | Uint8Array;
  readonly filename: string;
}

export async function formWith(files: readonly UploadFile[], fields: Record<string, string> = {}): Promise<FormData> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  for (const file of files) {
    const bytes = file.path ? await readFile(file.path) : (file.content ?? '');
    form.append(file.field, new Blob([bytes]), file.filename);
  }
  return form;
}

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

export async function post(
  server: { url: string },
  route: string,
  body: FormData | string | undefined,
  headers: Record<string, string> = { 'x-api-key': API_KEY },
): Promise<JsonResponse> {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', body, headers });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/** Upload folders are removed just after the response closes: poll briefly for that. */
export async function expectEmptyDir(dir: string, timeoutMs = onThisMachine(3000)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let left = await readdir(dir);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20);
    left = await readdir(dir);
  }
  if (left.length > 0) throw new Error(`upload dir not empty: ${left.join(', ')}`);
}
