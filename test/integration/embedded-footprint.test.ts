// The embedded default (no Redis settings) never loads the queue stack: ioredis comes with the
// first Redis client (shared/src/queue/connection.ts), BullMQ and bull-board with the dashboard
// (services/api/src/plugins/bull-board.ts). Loaded for nothing, they were 9 of the process's 31 MiB
// of heap after start, marked by every full collection. A fresh process starts the service as
// `npm start` does and lists the CommonJS modules it loaded (all three are CommonJS).
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onThisMachine } from '../helpers/deadline.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const url = (file: string) => pathToFileURL(path.join(ROOT, file)).href;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-footprint-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SCRIPT = `
import { createRequire } from 'node:module';
const { loadConfig } = await import(${JSON.stringify(url('shared/dist/index.js'))});
const { startServer } = await import(${JSON.stringify(url('services/api/dist/server.js'))});
const config = loadConfig({ API_KEY: 'k', HOST: '127.0.0.1', PORT: '0', UPLOAD_DIR: process.argv[1], LOG_LEVEL: 'silent', ACCESS_LOG: '/dev/null' });
const service = await startServer(config, 'all');
const answer = await fetch(service.url + '/healthz');
const loaded = Object.keys(createRequire(import.meta.url).cache);
await service.close();
console.log(JSON.stringify({ status: answer.status, loaded }));
`;

describe('the embedded default', () => {
  it('serves without loading ioredis, BullMQ or bull-board', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', SCRIPT, path.join(dir, 'up')], {
      timeout: onThisMachine(30_000),
    });
    const { status, loaded } = JSON.parse(stdout.trim().split('\n').at(-1)!) as { status: number; loaded: string[] };
    expect(status).toBe(200);
    // The list is the real one: the server's own CommonJS packages are in it.
    expect(loaded.some((file) => file.includes(`${path.sep}node_modules${path.sep}fastify${path.sep}`))).toBe(true);
    expect(loaded.filter((file) => /[\\/]node_modules[\\/](bullmq|ioredis|@bull-board)[\\/]/.test(file))).toEqual([]);
  });
});
