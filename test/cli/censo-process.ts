// The `censo` command run as a user runs it: a real process, its exit code, stdout as bytes and
// stderr as text. A permission error can only be seen by a user the file system refuses: when the
// suite runs as root (CI containers), such runs drop to `nobody` and the folders they use are
// handed to that user first.
//
// `nobody` may not reach the repository at all (a clone in /root, or in a `mktemp -d` folder), so
// its runs use a copy of the CLI made where anyone can read it: the same package `npm run
// pack:cli` ships (compiled CLI, the core's compiled files, the packages they load), made once per
// test file and removed at its end.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, lchown, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stageCli } from '../../cli/scripts/pack.mjs';
import { atFileEnd } from '../helpers/file-end.js';
import { onThisMachine } from '../helpers/deadline.js';

export const CLI = fileURLToPath(new URL('../../cli/bin/censo.js', import.meta.url));
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const RUNS_AS_ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

export interface RunOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Run as a user without root's right to read any file (chmod 000 means something). */
  readonly unprivileged?: boolean;
  /** The command run; default `node cli/bin/censo.js`. */
  readonly command?: readonly string[];
  /** The process, as soon as it is started (to signal it). */
  readonly started?: (child: ChildProcess) => void;
}

let copy: Promise<{ readonly folder: string; readonly cli: string }> | undefined;

/** The CLI where `nobody` can read it, made at its first use in a test file and removed at the file's end. */
function readableCli(): Promise<{ readonly folder: string; readonly cli: string }> {
  if (!copy) {
    const made = (async () => {
      const folder = await mkdtemp(path.join(os.tmpdir(), 'censo-cli-copia-'));
      await chmod(folder, 0o755);
      return { folder, cli: path.join(await stageCli(folder), 'bin', 'censo.js') };
    })();
    copy = made;
    atFileEnd(async () => {
      copy = undefined;
      await rm((await made).folder, { recursive: true, force: true });
    });
  }
  return copy;
}

export async function censo(args: readonly string[], options: RunOptions = {}): Promise<Run> {
  const unprivileged = Boolean(options.unprivileged && RUNS_AS_ROOT);
  const cli = unprivileged && options.command === undefined ? (await readableCli()).cli : CLI;
  const [file, ...first] = options.command ?? [process.execPath, cli];
  return new Promise((resolve, reject) => {
    const child = spawn(file!, [...first, ...args], {
      env: { PATH: process.env.PATH ?? '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: onThisMachine(60_000),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(unprivileged ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    options.started?.(child);
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout: Buffer.concat(out), stderr }));
  });
}

/** Makes `dir` and everything below it the unprivileged user's (nothing to do when not root). */
export async function handOver(dir: string): Promise<void> {
  if (!RUNS_AS_ROOT) return;
  await lchown(dir, NOBODY, NOBODY);
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    await lchown(path.join(entry.parentPath, entry.name), NOBODY, NOBODY);
  }
}
