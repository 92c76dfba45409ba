import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_NICENESS, createJobPool, OverloadedError, runJob, type JobData, type JobPool } from '@censo/shared';
import { waitFor } from '../helpers/wait-for.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASICO = path.join(ROOT, 'test/fixtures/basico');

let dir: string;
let big: string;
let pool: JobPool;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-pool-'));
  big = path.join(dir, 'big');
  // A return large enough that its job is still running when the test aborts it.
  await promisify(execFile)(
    process.execPath,
    [path.join(ROOT, 'bench/gen-big.mjs'), '--persons', '60000', '--out', big, '--formats', 'txt,json'],
    { cwd: ROOT },
  );
  pool = createJobPool({ threads: 1, closeTimeoutMs: 200 });
});
afterAll(async () => {
  await pool?.close();
  await rm(dir, { recursive: true, force: true });
});

const result = () => path.join(dir, `${n++}-result.json`);
const bigJob = (): JobData => ({
  kind: 'retorno-rf',
  retorno: { path: path.join(big, 'retorno.json'), format: 'json' },
  txt: { path: path.join(big, 'censo.txt') },
  resultPath: result(),
});

/** A job whose result reaches the disk while it runs, so a test can see that it has started. */
const streamingJob = (): JobData => ({
  kind: 'divergencias',
  retorno: { path: path.join(big, 'retorno.json'), format: 'json' },
  resultPath: result(),
});

async function untilWriting(data: JobData): Promise<void> {
  const writing = async () => existsSync(data.resultPath) && (await stat(data.resultPath)).size > 0;
  await waitFor(writing, { intervalMs: 5, what: 'the job to start writing its result' });
}

describe('job pool', () => {
  it('runs runJob on a worker thread with the same result', async () => {
    const data: JobData = {
      kind: 'retorno-rf',
      retorno: { path: path.join(BASICO, 'retorno.json'), format: 'json' },
      txt: { path: path.join(BASICO, 'censo.txt') },
      resultPath: result(),
    };
    const inThread = await pool.run(data);
    const body = await readFile(data.resultPath, 'utf8');
    const direct = await runJob({ ...data, resultPath: result() });
    expect(inThread).toEqual(direct);
    expect(JSON.parse(body)).toEqual(JSON.parse(await readFile(path.join(BASICO, 'expected-pessoas.json'), 'utf8')));
  });

  it('cancels a running job on abort: AbortError, no result file, the pool still works', async () => {
    const data = streamingJob();
    const controller = new AbortController();
    const running = pool.run(data, controller.signal).catch((e: unknown) => e);
    await untilWriting(data);
    const abortedAt = Date.now();
    controller.abort();
    const err = await running;
    expect(err).toMatchObject({ name: 'AbortError' });
    expect(Date.now() - abortedAt).toBeLessThan(250);
    // A write already handed to libuv may land after the thread is gone; the pool removes it again.
    await waitFor(() => !existsSync(data.resultPath), { what: 'the partial result to be removed' });
    const again = await pool.run(bigJob());
    expect(again).toMatchObject({ ok: true, count: expect.any(Number) });
  });

  it('rejects with AbortError for an already aborted signal', async () => {
    await expect(pool.run(bigJob(), AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('sheds load with OverloadedError (503) when its queue is full', async () => {
    const own = createJobPool({ threads: 1, maxQueue: 1, closeTimeoutMs: 100 });
    // A warm thread: the first job below runs at once, the second waits, the third finds no room.
    await own.run({ kind: 'divergencias', retorno: { path: path.join(BASICO, 'retorno.json'), format: 'json' }, resultPath: result() });
    const controller = new AbortController();
    const settled = [own.run(bigJob(), controller.signal), own.run(bigJob(), controller.signal), own.run(bigJob(), controller.signal)].map(
      (p) => p.catch((e: unknown) => e),
    );
    const third = await settled[2];
    expect(third).toBeInstanceOf(OverloadedError);
    expect(third).toMatchObject({ status: 503, message: 'Serviço sobrecarregado, tente novamente em instantes.' });
    controller.abort();
    await Promise.all(settled);
    await own.close();
  });

  it('close() does not hang on a running job', async () => {
    const own = createJobPool({ threads: 1, closeTimeoutMs: 100 });
    const data = streamingJob();
    const running = own.run(data).catch((e: unknown) => e);
    await untilWriting(data);
    const started = Date.now();
    await own.close();
    expect(Date.now() - started).toBeLessThan(3000);
    // Cut short by the thread's termination, or finished within the grace period: settled either way.
    await running;
    await own.close();
  });
});

describe('a pool for asynchronous tasks (niceness)', () => {
  /** Niceness of each of this process's threads, by thread id (Linux /proc). */
  async function threadNiceness(): Promise<Map<number, number>> {
    const { readdir } = await import('node:fs/promises');
    const out = new Map<number, number>();
    for (const tid of await readdir('/proc/self/task')) {
      const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => null);
      // Field 19 (nice), counted after the command name's closing parenthesis.
      if (stat !== null) out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    }
    return out;
  }

  it(`runs its jobs on threads at BATCH_NICENESS, leaving the process and its other threads as they were`, async () => {
    const before = await threadNiceness();
    const niced = createJobPool({ threads: 2, niceness: BATCH_NICENESS, startThreads: true });
    try {
      const job: JobData = {
        kind: 'divergencias',
        retorno: { path: path.join(BASICO, 'retorno.json'), format: 'json' },
        format: 'json',
        resultPath: result(),
      };
      expect(await niced.run(job)).toMatchObject({ ok: true });
      let added: number[] = [];
      await waitFor(
        async () => {
          const now = await threadNiceness();
          added = [...now].filter(([tid, nice]) => !before.has(tid) && nice === BATCH_NICENESS).map(([tid]) => tid);
          return added.length === 2;
        },
        { what: 'two threads at the batch niceness' },
      );
      expect(os.getPriority()).toBe(0);
      for (const [tid, nice] of before) if ((await threadNiceness()).has(tid)) expect([tid, nice]).toEqual([tid, 0]);
    } finally {
      await niced.close();
    }
  });
});
