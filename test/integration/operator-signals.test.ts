// The operator's signals (docs/operacao.md, "Sinais do operador"; issue 48) on the real entry
// points, as an operator starts them: none of them ends the process.
// - SIGUSR2 with `--heapsnapshot-signal=SIGUSR2`: a heap snapshot is written whole and the
//   process goes on serving /healthz; the embedded API (`npm start`), the API alone
//   (`--role=api`) and the worker (`start:worker`, its health server on PORT). Before issue 48
//   close-with-grace took SIGUSR2 as a request to stop, right after the snapshot.
// - SIGTTOU with `--report-on-signal --report-signal=SIGTTOU`: a diagnostic report (JSON).
// - SIGHUP: ACCESS_LOG is reopened at its path, so logrotate can move the file (postrotate).
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR } from '../helpers/fixtures.js';
import { API_KEY, formWith } from '../helpers/http.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basicoRetorno = path.join(FIXTURES_DIR, 'basico', 'retorno.json');

let dir = '';
const running: ServiceProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-operator-signals-'));
});

afterAll(async () => {
  for (const proc of running.reverse()) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) continue;
    // SIGKILL after a while: a process that ignored a signal it should have taken must not hang the suite.
    const timer = setTimeout(() => proc.child.kill('SIGKILL'), 15_000);
    await proc.stop();
    clearTimeout(timer);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * A folder of its own for each process's diagnostics: the default is the working folder, the
 * checkout. `--diagnostic-dir` moves the heap snapshot, not the report (`--report-directory`).
 */
async function diagnosticDir(name: string): Promise<string> {
  const folder = path.join(dir, name);
  await mkdir(folder);
  return folder;
}

const diagnosticOptions = (folder: string) =>
  `--heapsnapshot-signal=SIGUSR2 --report-on-signal --report-signal=SIGTTOU --diagnostic-dir=${folder} --report-directory=${folder}`;

function start(script: string, env: Record<string, string>, args: readonly string[] = []): ServiceProcess {
  const proc = startServiceProcess(script, { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', API_KEY, ...env }, args);
  running.push(proc);
  return proc;
}

/** Waits for the `n`-th log line with this message. */
async function nthLine(proc: ServiceProcess, msg: string, n: number): Promise<Record<string, unknown>> {
  await waitFor(() => proc.lines.filter((line) => line.msg === msg).length >= n || proc.child.exitCode !== null, {
    timeoutMs: onThisMachine(60_000),
    intervalMs: 50,
    what: `"${msg}" logged ${n} time(s)`,
  });
  const found = proc.lines.filter((line) => line.msg === msg)[n - 1];
  if (!found) throw new Error(`the process ended (${proc.child.exitCode}) before logging "${msg}"`);
  return found;
}

/**
 * SIGUSR2: one heap snapshot, written whole, and the process still serving. Node writes it
 * synchronously in its own listener, before the service's logs 'heap snapshot written': that line
 * is the bounded wait for a complete file.
 */
async function expectSnapshotAndServing(proc: ServiceProcess, url: string, folder: string): Promise<void> {
  proc.child.kill('SIGUSR2');
  expect(await nthLine(proc, 'heap snapshot written', 1)).toMatchObject({ signal: 'SIGUSR2' });
  const snapshots = (await readdir(folder)).filter((name) => /^Heap\..*\.heapsnapshot$/.test(name));
  expect(snapshots).toHaveLength(1);
  const text = await readFile(path.join(folder, snapshots[0]!), 'utf8');
  expect(text.length).toBeGreaterThan(1_000_000);
  // Whole: a snapshot is one JSON object.
  expect(Object.keys(JSON.parse(text) as object)).toContain('snapshot');
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  expect(proc.child.exitCode).toBeNull();
  expect(proc.child.signalCode).toBeNull();
  expect(proc.lines.find((line) => line.msg === 'closing')).toBeUndefined();
}

async function upload(url: string): Promise<void> {
  const body = await formWith([{ field: 'retorno', path: basicoRetorno, filename: 'retorno.json' }]);
  const response = await fetch(`${url}/api/divergencias-rf`, { method: 'POST', headers: { 'x-api-key': API_KEY }, body });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
}

async function accessLines(file: string): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('npm start (the API with its jobs, embedded)', () => {
  let proc: ServiceProcess;
  let url = '';
  let folder = '';
  const accessLog = () => path.join(dir, 'acesso.log');

  beforeAll(async () => {
    folder = await diagnosticDir('embedded');
    proc = start('services/api/dist/main.js', {
      UPLOAD_DIR: path.join(dir, 'uploads-embedded'),
      ACCESS_LOG: accessLog(),
      NODE_OPTIONS: diagnosticOptions(folder),
    });
    url = String((await proc.line('censo-api listening', onThisMachine(30_000))).url);
  }, onThisMachine(60_000));

  it(
    'SIGUSR2 writes a heap snapshot and the process goes on serving',
    async () => {
      await expectSnapshotAndServing(proc, url, folder);
    },
    onThisMachine(90_000),
  );

  it(
    'SIGTTOU writes a diagnostic report and the process goes on serving',
    async () => {
      proc.child.kill('SIGTTOU');
      expect(await nthLine(proc, 'diagnostic report written', 1)).toMatchObject({ signal: 'SIGTTOU' });
      const reports = (await readdir(folder)).filter((name) => /^report\..*\.json$/.test(name));
      expect(reports).toHaveLength(1);
      // It holds the environment (API keys, passwords): its user's to read only (issue 59).
      expect((await stat(path.join(folder, reports[0]!))).mode & 0o777).toBe(0o600);
      const report = JSON.parse(await readFile(path.join(folder, reports[0]!), 'utf8')) as { header: Record<string, unknown> };
      expect(report.header).toMatchObject({ event: 'SIGTTOU', trigger: 'Signal', processId: proc.child.pid });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(proc.child.exitCode).toBeNull();
    },
    onThisMachine(60_000),
  );

  it(
    'SIGHUP reopens ACCESS_LOG: after logrotate moves the file, the next lines go to a new file at the same path',
    async () => {
      await upload(url);
      await waitFor(async () => (await accessLines(accessLog())).length === 1, { what: 'the first access line' });
      const moved = `${accessLog()}-1`;
      await rename(accessLog(), moved);

      proc.child.kill('SIGHUP');
      expect(await nthLine(proc, 'log files reopened', 1)).toMatchObject({ signal: 'SIGHUP' });
      await upload(url);
      await waitFor(async () => (await accessLines(accessLog())).length === 1, { what: 'the second access line, in a new file' });

      const before = await accessLines(moved);
      const after = await accessLines(accessLog());
      expect(before).toHaveLength(1);
      expect(after).toHaveLength(1);
      for (const line of [...before, ...after]) expect(line).toMatchObject({ log: 'access', route: '/api/divergencias-rf', status: 200 });
      expect(after[0]!.requestId).not.toBe(before[0]!.requestId);
      // The new file is made as the first was: not readable by others.
      expect((await stat(accessLog())).mode & 0o777).toBe(0o640 & ~process.umask());
      expect(proc.child.exitCode).toBeNull();
    },
    onThisMachine(30_000),
  );

  it(
    'SIGTERM still closes it gracefully',
    async () => {
      const exited = once(proc.child, 'exit');
      proc.child.kill('SIGTERM');
      expect((await exited)[0]).toBe(0);
      expect(proc.lines.find((line) => line.msg === 'closing')).toMatchObject({ signal: 'SIGTERM' });
    },
    onThisMachine(45_000),
  );
});

describe('queue mode: start:api and start:worker', () => {
  let redis: TestRedis;
  const queuePrefix = uniqueQueuePrefix();
  const env = () => ({ REDIS_URL: redis.url, QUEUE_PREFIX: queuePrefix, UPLOAD_DIR: path.join(dir, 'uploads-queue') });

  beforeAll(async () => {
    redis = await startTestRedis();
  }, onThisMachine(60_000));

  afterAll(async () => {
    if (!redis) return;
    await deleteKeys(redis.url, queuePrefix);
    await redis.stop();
  });

  it(
    'SIGUSR2 writes a heap snapshot of start:api and it goes on serving',
    async () => {
      const folder = await diagnosticDir('api');
      const proc = start('services/api/dist/main.js', { ...env(), NODE_OPTIONS: diagnosticOptions(folder) }, ['--role=api']);
      const url = String((await proc.line('censo-api listening', onThisMachine(30_000))).url);
      await expectSnapshotAndServing(proc, url, folder);
    },
    onThisMachine(90_000),
  );

  it(
    'SIGUSR2 writes a heap snapshot of start:worker and it goes on serving its health and metrics',
    async () => {
      const folder = await diagnosticDir('worker');
      const proc = start('services/worker/dist/main.js', { ...env(), NODE_OPTIONS: diagnosticOptions(folder) });
      const url = String((await proc.line('worker health server listening', onThisMachine(30_000))).url);
      await expectSnapshotAndServing(proc, url, folder);
      // SIGHUP: the worker has no log file of its own; it says so and goes on.
      proc.child.kill('SIGHUP');
      expect(await nthLine(proc, 'no log file to reopen', 1)).toMatchObject({ signal: 'SIGHUP' });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    },
    onThisMachine(90_000),
  );
});
