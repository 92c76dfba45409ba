// A Redis connection cut silently (a network partition: no FIN, no RST, the packets just stop)
// must not keep the API away from Redis after the network heals. TCP would keep such a socket
// open and retransmit on a backed-off timer (up to a minute late after a 30 s outage, as the
// cluster suite measured); the client drops a socket that has heard nothing for its command
// timeout and opens a new one. Played with a proxy that swallows the traffic of the connections
// it holds while "partitioned", and keeps them dead afterwards as a stale TCP connection would.
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedisClient, createLogger, createRedisClient, loadConfig } from '@censo/shared';
import { startServer, type RunningServer } from '@censo/api';
import { startWorker, type RunningWorker } from '@censo/worker';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, expectEmptyDir, formWith, post } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { onThisMachine } from '../helpers/deadline.js';

const silent = createLogger({ logLevel: 'silent' }, {});
const [basico] = fixtureCases();

interface PartitionProxy {
  readonly url: string;
  /** From now on nothing passes, in either direction, on any connection; none is closed. */
  partition(): void;
  /** New connections pass again; those held during the partition stay silent for good. */
  heal(): void;
  close(): Promise<void>;
}

async function startPartitionProxy(targetUrl: string): Promise<PartitionProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  const dead = new WeakSet<net.Socket>();
  let partitioned = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const sock of [client, upstream]) {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
      sock.on('error', () => undefined);
    }
    if (partitioned) dead.add(client);
    client.on('data', (chunk) => void (!partitioned && !dead.has(client) && upstream.write(chunk)));
    upstream.on('data', (chunk) => void (!partitioned && !dead.has(client) && client.write(chunk)));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    partition() {
      partitioned = true;
      for (const sock of sockets) dead.add(sock);
    },
    heal() {
      partitioned = false;
    },
    async close() {
      for (const sock of sockets) sock.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let redis: TestRedis;
let proxy: PartitionProxy;
let api: RunningServer;
let worker: RunningWorker;
let uploadDir: string;
const prefix = uniqueQueuePrefix();

beforeAll(async () => {
  redis = await startTestRedis();
  proxy = await startPartitionProxy(redis.url);
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-partition-'));
  const env = {
    QUEUE_PREFIX: prefix,
    UPLOAD_DIR: uploadDir,
    API_KEY,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '1',
  };
  // Only the API is behind the partition; the worker reaches Redis directly.
  worker = await startWorker(loadConfig({ ...env, REDIS_URL: redis.url }), silent);
  await worker.waitUntilReady();
  api = await startServer(loadConfig({ ...env, REDIS_URL: proxy.url }), 'api', silent);
});

afterAll(async () => {
  await api?.close();
  await worker?.close();
  await proxy?.close();
  await deleteKeys(redis.url, prefix);
  await redis?.stop();
  await rm(uploadDir, { recursive: true, force: true });
});

const upload = async () =>
  post(api, '/api/divergencias-rf', await formWith([{ field: 'retorno', path: basico!.retorno.json, filename: 'retorno.json' }]));

describe('Redis silently partitioned from the API', () => {
  it(
    '503 while it lasts; after it heals uploads succeed again within seconds, on new connections',
    async () => {
      expect((await upload()).status).toBe(200);

      proxy.partition();
      const during = await upload();
      expect(during.status).toBe(503);
      expect(during.body).toEqual({ erro: 'Fila de processamento indisponível.' });

      proxy.heal();
      // Bounded: 8 attempts (each 503 takes the 3 s enqueue timeout). The old sockets never answer again.
      let recovered = false;
      for (let i = 0; i < 8 && !recovered; i++) {
        const res = await upload();
        recovered = res.status === 200;
        if (!recovered) {
          expect(res.body).toEqual({ erro: 'Fila de processamento indisponível.' });
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
      expect(recovered).toBe(true);
      expect((await upload()).status).toBe(200);
      await expectEmptyDir(uploadDir);
    },
    onThisMachine(60_000),
  );
});

describe('a connection lost with a command in flight', () => {
  it(
    "the lost socket's timeout does not cut the connection that replaced it (ioredis#2147)",
    async () => {
      // A proxy that swallows the next command of the current connection and then drops it, as
      // a master killed mid-command does; the client reconnects through it at once.
      const target = new URL(redis.url);
      let swallowNext = false;
      const server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 6379), target.hostname);
        for (const sock of [client, upstream]) sock.on('error', () => undefined);
        client.on('data', (chunk) => {
          if (!swallowNext) return void upstream.write(chunk);
          swallowNext = false;
          setTimeout(() => client.destroy(), 20);
        });
        upstream.on('data', (chunk) => client.write(chunk));
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as net.AddressInfo;
      // A 1 s command timeout: the socket timeout is its floor, 5 s.
      const client = createRedisClient({ kind: 'url', url: `redis://127.0.0.1:${port}`, password: null }, 'fail-fast', {
        commandTimeout: 1_000,
      });
      const errors: string[] = [];
      let closes = 0;
      client.on('error', (err: Error) => errors.push(err.message));
      client.on('close', () => closes++);
      try {
        await new Promise((resolve) => client.once('ready', resolve));
        swallowNext = true;
        await client.ping().catch(() => undefined); // lost with its connection
        for (let i = 0; i < 50 && (closes === 0 || client.status !== 'ready'); i++)
          await new Promise((resolve) => setTimeout(resolve, 100));
        expect(client.status).toBe('ready');
        const closesAfterReconnect = closes;
        // Past the lost command's socket deadline (5 s), the new connection keeps answering.
        for (let i = 0; i < 14; i++) {
          expect(await client.ping()).toBe('PONG');
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        expect(errors.filter((message) => message.startsWith('Socket timeout'))).toEqual([]);
        expect(closes).toBe(closesAfterReconnect);
      } finally {
        await closeRedisClient(client);
        await new Promise((resolve) => server.close(resolve));
      }
    },
    onThisMachine(30_000),
  );
});
