// Issue 55: every message addressed to the process that needs it. Two APIs and two workers share
// one queue on a redis-server of the test's own, whose MONITOR records every command each
// connection sends: what each process reads is what it asks for (XREAD's streams, SUBSCRIBE's
// channels) and what those hold. An API reads its own stream, which holds the ends of its own jobs
// and no other; a worker reads no events stream, and hears on its own channels alone the
// cancellation of the job it runs.
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CANCEL_EVENT,
  JOB_QUEUE,
  TASK_ENDED_EVENT,
  TASK_QUEUE,
  cancelChannel,
  createLogger,
  loadConfig,
  type Config,
  type JobData,
  type JobExecutor,
  type JobResult,
} from '@censo/shared';
import { createBullmqRunner, type BullmqRunner } from '@censo/api';
import { startWorker, type RunningWorker } from '@censo/worker';
import { logLines } from '../helpers/log-lines.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, stopRedisServer } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const silent = createLogger({ logLevel: 'silent' }, {});

let server: ChildProcess | null = null;
let port: number;
let monitor: Redis;
let uploadDir: string;
let config: Config;
/** Every command the server ran, with the connection that sent it. */
const commands: { source: string; args: string[] }[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

/** A job that answers at once, except the one the test holds until it is cancelled. */
interface HeldExecutor extends JobExecutor {
  readonly ran: string[];
  readonly aborted: string[];
}
function executor(hold: Set<string>): HeldExecutor {
  const ran: string[] = [];
  const aborted: string[] = [];
  return {
    ran,
    aborted,
    async run(data: JobData, signal?: AbortSignal): Promise<JobResult> {
      const id = path.basename(path.dirname(data.resultPath));
      ran.push(id);
      if (hold.has(id)) {
        await new Promise<void>((_, reject) =>
          signal?.addEventListener('abort', () => {
            aborted.push(id);
            reject(Object.assign(new Error(String(signal.reason)), { name: 'AbortError' }));
          }),
        );
      }
      return { ok: true, count: 0, divergencias: [] } as unknown as JobResult;
    },
  };
}

async function jobData(): Promise<{ id: string; data: JobData }> {
  const id = randomUUID();
  const dir = path.join(uploadDir, id);
  await mkdir(dir);
  await writeFile(path.join(dir, 'retorno.json'), '[]');
  return {
    id,
    data: {
      kind: 'divergencias',
      retorno: { path: path.join(dir, 'retorno.json'), format: 'json' },
      resultPath: path.join(dir, 'resultado.json'),
    },
  };
}

beforeAll(async () => {
  port = await freePort();
  server = await startRedisServer(port);
  uploadDir = await mkdtemp(path.join(os.tmpdir(), 'censo-enderecadas-'));
  config = loadConfig({
    REDIS_URL: `redis://127.0.0.1:${port}`,
    QUEUE_PREFIX: '{enderecadas}',
    UPLOAD_DIR: uploadDir,
    API_KEY: 'k',
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '1',
  });
  // monitor() opens a connection of its own: the client it came from is closed here, or it would
  // outlive the server, reconnecting in this test process (shared with later files) for good.
  const base = new Redis(port, '127.0.0.1');
  monitor = await base.monitor();
  base.disconnect();
  monitor.on('monitor', (_time: string, args: string[], source: string) => commands.push({ source, args }));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  monitor?.disconnect();
  await stopRedisServer(server);
  await rm(uploadDir, { recursive: true, force: true });
});

describe('messages addressed to the process that needs them (issue 55)', () => {
  let apis: BullmqRunner[];
  let workers: { running: RunningWorker; jobs: HeldExecutor }[];
  const held = new Set<string>();

  beforeAll(async () => {
    workers = [];
    for (let i = 0; i < 2; i++) {
      const jobs = executor(held);
      const running = await startWorker(config, silent, { executor: jobs, drainMs: 1_000 });
      cleanups.push(() => running.close());
      await running.waitUntilReady();
      workers.push({ running, jobs });
    }
    apis = [createBullmqRunner(config, silent), createBullmqRunner(config, silent)];
    for (const api of apis) cleanups.push(() => api.close());
  });

  it("each API reads the ends of its own jobs only, and no worker reads the queue's events", async () => {
    const byApi: string[][] = [[], []];
    const settled: string[][] = [[], []];
    apis.forEach((api, i) => api.tasks.onSettled((id) => settled[i]!.push(id)));
    await Promise.all(
      apis.map(async (api, i) => {
        for (let n = 0; n < 4; n++) {
          const { id, data } = await jobData();
          byApi[i]!.push(id);
          await api.run(data, { id, deadline: Date.now() + 30_000, signal: new AbortController().signal });
        }
        // Tasks too: two of their own and a group of two, whose ends come as TASK_ENDED_EVENT.
        const tasks = await Promise.all([jobData(), jobData(), jobData(), jobData()]);
        const grupo = `g-${randomUUID()}`;
        await api.tasks.submit(tasks.map(({ id, data }, k) => ({ id, data, grupo: k < 2 ? null : grupo })));
        byApi[i]!.push(...tasks.map(({ id }) => id));
        await waitFor(async () => tasks.every(({ id }) => settled[i]!.includes(id)), {
          timeoutMs: onThisMachine(20_000),
          what: "the tasks' ends",
        });
      }),
    );

    // What each API read: XREAD on one stream, its own, never the queue's events streams.
    const xreads = commands.filter(({ args }) => args[0]?.toLowerCase() === 'xread');
    const read = new Map<string, Set<string>>(); // connection → streams it read
    for (const { source, args } of xreads) {
      const streams = args.slice(args.findIndex((arg) => arg.toUpperCase() === 'STREAMS') + 1);
      const keys = streams.slice(0, streams.length / 2);
      read.set(source, new Set([...(read.get(source) ?? []), ...keys]));
    }
    const streamsRead = [...read.values()].flatMap((keys) => [...keys]);
    expect(streamsRead.filter((key) => key.endsWith(':events'))).toEqual([]);
    expect([...read.values()].every((keys) => keys.size === 1)).toBe(true);
    expect(new Set(streamsRead).size).toBe(2);

    // Each stream holds the ends of one API's jobs, and all of them.
    const direct = new Redis(port, '127.0.0.1');
    cleanups.push(async () => direct.disconnect());
    const told = new Map<string, Set<string>>();
    for (const stream of new Set(streamsRead)) {
      const ids = new Set<string>();
      for (const [, flat] of await direct.xrange(stream, '-', '+')) {
        const fields = Object.fromEntries(flat.flatMap((v, k) => (k % 2 === 0 ? [[v, flat[k + 1]!]] : [])));
        if (fields.event === TASK_ENDED_EVENT) fields.tarefas!.split(',').forEach((id) => ids.add(id));
        else if (!fields.jobId!.startsWith('g-')) ids.add(fields.jobId!);
      }
      told.set(stream, ids);
    }
    const owners = byApi.map((ids) => [...told].find(([, endsRead]) => endsRead.has(ids[0]!))?.[0]);
    expect(owners[0]).toBeDefined();
    expect(owners[1]).toBeDefined();
    expect(owners[0]).not.toBe(owners[1]);
    byApi.forEach((ids, i) => expect([...told.get(owners[i]!)!].sort()).toEqual([...ids].sort()));

    // No worker read anything: the workers' connections sent no XREAD (they are not among the readers).
    expect(read.size).toBe(2);
    // And each API was told of its own tasks only.
    expect(settled[0]!.filter((id) => byApi[1]!.includes(id))).toEqual([]);
    expect(settled[1]!.filter((id) => byApi[0]!.includes(id))).toEqual([]);
  });

  it('a cancellation reaches the worker holding the job, on its own channel, and no other', async () => {
    const { id, data } = await jobData();
    held.add(id);
    const request = new AbortController();
    const before = commands.length;
    const answer = apis[0]!.run(data, { id, deadline: Date.now() + 30_000, signal: request.signal }).catch((err: unknown) => err);
    await waitFor(async () => workers.some(({ jobs }) => jobs.ran.includes(id)), {
      timeoutMs: onThisMachine(20_000),
      what: 'the job to start',
    });
    const holder = workers.find(({ jobs }) => jobs.ran.includes(id))!;
    const other = workers.find((one) => one !== holder)!;
    request.abort(new Error('client gone'));
    await answer;
    await waitFor(async () => holder.jobs.aborted.includes(id), { timeoutMs: onThisMachine(20_000), what: 'the holder to stop the job' });

    // Each worker subscribed to its own two channels, on one connection, and to nothing else.
    const subscriptions = commands.filter(({ args }) => ['subscribe', 'psubscribe', 'ssubscribe'].includes(args[0]!.toLowerCase()));
    const channelsOf = (one: RunningWorker) => [
      cancelChannel(config.queuePrefix, JOB_QUEUE, one.worker.id),
      cancelChannel(config.queuePrefix, TASK_QUEUE, one.tasks.id),
    ];
    expect(subscriptions.map(({ args }) => args.slice(1).sort()).sort()).toEqual(
      workers.map(({ running }) => channelsOf(running).sort()).sort(),
    );
    // One message, on the holder's channel; nothing on the events stream.
    const sent = commands.slice(before).filter(({ args }) => ['publish', 'spublish'].includes(args[0]!.toLowerCase()));
    expect(sent.map(({ args }) => args.slice(1))).toEqual([[cancelChannel(config.queuePrefix, JOB_QUEUE, holder.running.worker.id), id]]);
    const onEvents = commands.slice(before).filter(({ args }) => args[0]?.toLowerCase() === 'xadd' && args.includes(CANCEL_EVENT));
    expect(onEvents).toEqual([]);
    expect(other.jobs.aborted).toEqual([]);
  });
});

describe('a worker from before addressed messages (a rolling upgrade, contract 3)', () => {
  it('the API reads the events streams while it is connected: its job is answered, and a cancellation reaches it there', async () => {
    const older = loadConfig({
      REDIS_URL: `redis://127.0.0.1:${port}`,
      QUEUE_PREFIX: '{enderecadas-antigo}',
      UPLOAD_DIR: uploadDir,
      API_KEY: 'k',
      LOG_LEVEL: 'silent',
      WORKER_CONCURRENCY: '1',
    });
    const held = new Set<string>();
    const jobs = executor(held);
    const worker = await startWorker(older, silent, { executor: jobs, drainMs: 1_000, contractVersion: 3, addressed: false });
    cleanups.push(() => worker.close());
    await worker.waitUntilReady();
    const { lines, sink } = logLines();
    // Its jobs as a release whose core jobs did not change would queue them (issue 56 raised the
    // core contract to 4, which a worker of 3 gives back), so the older worker runs them.
    const api = createBullmqRunner(older, pino({ level: 'info' }, sink), { coreContract: 3 });
    cleanups.push(() => api.close());
    await waitFor(() => lines.some((line) => line.msg === 'reading the events streams: a connected worker tells no job end to its API'), {
      timeoutMs: onThisMachine(20_000),
      what: 'the API to read the events streams',
    });
    const before = commands.length;

    const done = await jobData();
    const answer = await api.run(done.data, { id: done.id, deadline: Date.now() + 30_000, signal: new AbortController().signal });
    expect(answer).toMatchObject({ ok: true });
    // Heard on the events stream: nothing was told to the API's own.
    const xreads = commands.slice(before).filter(({ args }) => args[0]?.toLowerCase() === 'xread');
    expect(xreads.some(({ args }) => args.includes(`${older.queuePrefix}:${JOB_QUEUE}:events`))).toBe(true);
    expect(commands.slice(before).filter(({ args }) => args[0]?.toLowerCase() === 'xadd' && args[1]!.includes(':fim:'))).toEqual([]);

    const { id, data } = await jobData();
    held.add(id);
    const request = new AbortController();
    const cancelled = api.run(data, { id, deadline: Date.now() + 30_000, signal: request.signal }).catch((err: unknown) => err);
    await waitFor(() => jobs.ran.includes(id), { timeoutMs: onThisMachine(20_000), what: 'the job to start' });
    const sent = commands.length;
    request.abort(new Error('client gone'));
    await cancelled;
    await waitFor(() => jobs.aborted.includes(id), { timeoutMs: onThisMachine(20_000), what: 'the older worker to stop the job' });
    // Nobody took it on the worker's channel, so it went on the events stream, where that worker reads.
    const after = commands.slice(sent);
    expect(after.filter(({ args }) => args[0]?.toLowerCase() === 'publish').map(({ args }) => args[1])).toEqual([
      cancelChannel(older.queuePrefix, JOB_QUEUE, worker.worker.id),
    ]);
    expect(after.some(({ args }) => args[0]?.toLowerCase() === 'xadd' && args.includes(CANCEL_EVENT) && args.includes(id))).toBe(true);
  });
});
