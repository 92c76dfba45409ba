// SPEC §9 "`npm ci --omit=dev` followed by the start commands runs the service (no compiler at
// start)" (issue 34: `prestart` ran `tsc`, which a production install does not have). The
// repository's files and its built dist/ are copied to a folder of their own, as a release or an
// image's build stage lays them out, installed there with `npm ci --omit=dev`, and every start
// command is run in it through npm, so its pre-script runs too.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onThisMachine } from '../helpers/deadline.js';
import { findCompiler } from '../../scripts/build-if-needed.mjs';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY, formWith } from '../helpers/http.js';
import { deleteKeys, startTestRedis, uniqueQueuePrefix, type TestRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKSPACES = ['shared', 'services/worker', 'services/api', 'cli'];
const INSTALL_TIMEOUT_MS = onThisMachine(180_000);
const START_TIMEOUT_MS = onThisMachine(30_000);
/** A start, a request or two and a stop, each bounded by START_TIMEOUT_MS. */
const TEST_TIMEOUT_MS = onThisMachine(120_000);

const basico = fixtureCases().find((c) => c.name === 'basico')!;
let redis: TestRedis;
let tree: string;
let uploadDir: string;
const queuePrefix = uniqueQueuePrefix();
const running = new Set<NpmProcess>();

/** What npm needs from this environment (PATH, HOME for its cache), without an outer npm's npm_* settings. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.toLowerCase().startsWith('npm_')) env[name] = value;
  return { ...env, NODE_ENV: 'production', ...extra };
}

beforeAll(async () => {
  redis = await startTestRedis();
  tree = await mkdtemp(path.join(os.tmpdir(), 'censo-lean-'));
  uploadDir = path.join(tree, 'uploads');
  // The tracked files and the new ones not ignored (the working tree as it would be committed),
  // then the compiled code; no node_modules, no .tsbuildinfo.
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files: ${listed.stderr}`);
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    if (!existsSync(path.join(ROOT, file))) continue; // deleted in the working tree
    await mkdir(path.dirname(path.join(tree, file)), { recursive: true });
    await cp(path.join(ROOT, file), path.join(tree, file));
  }
  for (const workspace of WORKSPACES) await cp(path.join(ROOT, workspace, 'dist'), path.join(tree, workspace, 'dist'), { recursive: true });

  const install = spawnSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--ignore-scripts=false'], {
    cwd: tree,
    env: cleanEnv({}),
    encoding: 'utf8',
    timeout: INSTALL_TIMEOUT_MS,
  });
  if (install.status !== 0)
    throw new Error(`npm ci --omit=dev failed (${install.status ?? install.signal}): ${install.stderr.slice(-2000)}`);
  // npm keeps TypeScript in a production install when a dependency names it as an optional peer
  // (valibot, under @bull-board/api): the lock file marks it devOptional. Whether a host has it
  // or not, the start must not use it; without it, any compile at start fails.
  await rm(path.join(tree, 'node_modules', 'typescript'), { recursive: true, force: true });
  for (const bin of ['tsc', 'tsserver']) await rm(path.join(tree, 'node_modules', '.bin', bin), { force: true });
}, INSTALL_TIMEOUT_MS + 60_000);

afterAll(async () => {
  for (const process of running) await process.stop();
  await deleteKeys(redis.url, queuePrefix);
  await redis?.stop();
  if (tree) await rm(tree, { recursive: true, force: true });
});

interface NpmProcess {
  readonly lines: Array<Record<string, unknown>>;
  stderr(): string;
  line(msg: string): Promise<Record<string, unknown>>;
  /** SIGTERM to the whole group (npm and the node process under it); resolves once its output has ended. */
  stop(): Promise<void>;
  /** npm's exit code, once its output has ended. */
  readonly exited: Promise<number | null>;
}

/** `npm <args>` in the lean tree, in a process group of its own so the stop reaches node under npm. */
function npm(args: readonly string[], env: Record<string, string>): NpmProcess {
  const child: ChildProcess = spawn('npm', args, { cwd: tree, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const lines: Array<Record<string, unknown>> = [];
  let stderr = '';
  let buffered = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    // npm's own banner lines ("> censo-api@0.3.0 start") are not the service's log.
    for (const part of parts) if (part.startsWith('{')) lines.push(JSON.parse(part) as Record<string, unknown>);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // 'close': the exit, and every line written before it read.
  const exited = once(child, 'close').then(([code]) => code as number | null);
  const handle: NpmProcess = {
    lines,
    exited,
    stderr: () => stderr,
    async line(msg) {
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        const found = lines.find((l) => l.msg === msg);
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`npm ${args.join(' ')} never logged "${msg}": ${stderr.slice(-2000)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exited;
      running.delete(handle);
    },
  };
  running.add(handle);
  return handle;
}

/**
 * The line matching `match`, and no line logged after it by its clock. Not the last line read:
 * pino writes through libuv's thread pool, and at exit writes what it still holds at once, ahead
 * of a line whose write still waits in the pool; on a busy machine a stopping process's last two
 * lines reached the pipe swapped (CI: the API's `closing` before the request it had just logged,
 * and in stop 68 the worker's `worker closed` before its `closing`).
 */
function lastLogged(lines: readonly Record<string, unknown>[], match: Record<string, unknown>): void {
  const found = lines.find((line) => Object.entries(match).every(([key, value]) => line[key] === value));
  expect(found, JSON.stringify(lines.slice(-3))).toBeDefined();
  const at = (line: Record<string, unknown>) => Date.parse(String(line.time));
  expect(lines.filter((line) => at(line) > at(found!)).map((line) => line.msg)).toEqual([]);
}

async function healthz(url: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${url}/healthz`);
  return { status: response.status, body: await response.json() };
}

async function upload(url: string): Promise<number> {
  const form = await formWith([{ field: 'retorno', path: basico.retorno.xlsx, filename: 'retorno.xlsx' }]);
  const response = await fetch(`${url}/api/divergencias-rf`, { method: 'POST', body: form, headers: { 'x-api-key': API_KEY } });
  await response.arrayBuffer();
  return response.status;
}

const serviceEnv = () => ({ API_KEY, HOST: '127.0.0.1', PORT: '0', UPLOAD_DIR: uploadDir, LOG_LEVEL: 'info', WORKER_CONCURRENCY: '1' });
const queueEnv = () => ({ ...serviceEnv(), REDIS_URL: redis.url, QUEUE_PREFIX: queuePrefix });

/** Bare module names a compiled file imports (static, dynamic and createRequire'd). */
function importsOf(code: string): string[] {
  const names: string[] = [];
  for (const match of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\)\s*\(\s*)'([^'.][^']*)'/g)) {
    const spec = match[1]!;
    if (spec.startsWith('node:')) continue;
    names.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
  }
  return names;
}

async function compiledFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.js')).map((e) => path.join(e.parentPath, e.name));
}

describe('a lean install (npm ci --omit=dev on a tree with dist/)', () => {
  it('has no compiler, and every package the compiled code imports is a dependency of its workspace, installed', async () => {
    expect(findCompiler(tree)).toBeNull();
    const missing: string[] = [];
    for (const workspace of WORKSPACES) {
      const manifest = JSON.parse(await readFile(path.join(tree, workspace, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      const declared = new Set(Object.keys(manifest.dependencies ?? {}));
      for (const file of await compiledFiles(path.join(tree, workspace, 'dist'))) {
        for (const name of importsOf(await readFile(file, 'utf8'))) {
          const installed = [path.join(tree, 'node_modules', name), path.join(tree, workspace, 'node_modules', name)].some((dir) =>
            existsSync(dir),
          );
          if (!declared.has(name) || !installed)
            missing.push(`${path.relative(tree, file)}: ${name}${installed ? '' : ' (not installed)'}`);
        }
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it(
    'npm start (embedded) starts without compiling and answers',
    async () => {
      const service = npm(['start'], serviceEnv());
      const { url } = (await service.line('censo-api listening')) as { url: string };
      expect(await healthz(url)).toEqual({ status: 200, body: { status: 'ok' } });
      expect(await upload(url)).toBe(200);
      await service.stop();
      // npm itself dies of the SIGTERM; the service under it closed as it does on any SIGTERM.
      lastLogged(service.lines, { msg: 'closing', signal: 'SIGTERM' });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'npm run start:worker and npm run start:api start without compiling, and run a job together',
    async () => {
      const worker = npm(['run', 'start:worker'], queueEnv());
      const { url: workerUrl } = (await worker.line('worker health server listening')) as { url: string };
      expect(await healthz(workerUrl)).toEqual({ status: 200, body: { status: 'ok' } });
      const api = npm(['run', 'start:api'], queueEnv());
      const { url } = (await api.line('censo-api listening')) as { url: string };
      expect(await healthz(url)).toEqual({ status: 200, body: { status: 'ok' } });
      expect(await upload(url)).toBe(200);
      // The worker's line comes through its own pipe, not always before the API's answer.
      await worker.line('job done');
      expect(worker.lines.filter((line) => line.msg === 'job done')).toHaveLength(1);
      await api.stop();
      await worker.stop();
      lastLogged(api.lines, { msg: 'closing', signal: 'SIGTERM' });
      lastLogged(worker.lines, { msg: 'worker closed' });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'without dist/ and without a compiler, a start stops with one line saying so',
    async () => {
      await rm(path.join(tree, 'services/worker/dist'), { recursive: true, force: true });
      const worker = npm(['run', 'start:worker'], queueEnv());
      expect(await worker.exited).toBe(1);
      const ours = worker
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('censo:'));
      expect(ours).toEqual([
        'censo: services/worker not compiled (no dist/) and TypeScript is not installed: run npm ci and npm run build, or install a release that has dist/',
      ]);
      expect(worker.lines).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
