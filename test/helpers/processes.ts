// A service entry point run as its own process (another "host"), with its JSON log lines
// collected so a test can wait for one.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { onThisMachine } from './deadline.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly lines: Array<Record<string, unknown>>;
  /** The same lines as written, for checks JSON.parse cannot make (a key twice: strict-json.ts). */
  readonly raw: string[];
  /** The first log line with this message, waiting for it up to `timeoutMs`. */
  line(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** `script` relative to the repository, e.g. services/worker/dist/main.js. Only PATH is inherited. */
export function startServiceProcess(script: string, env: Record<string, string>, args: readonly string[] = []): ServiceProcess {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  let buffered = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const part of parts) {
      if (!part) continue;
      raw.push(part);
      lines.push(JSON.parse(part) as Record<string, unknown>);
    }
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    lines,
    raw,
    async line(msg, timeoutMs = onThisMachine(15_000)) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((l) => l.msg === msg);
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${script} never logged "${msg}"`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * Starts the API (services/api/dist/main.js) with `env` over a minimal valid configuration and
 * waits for it to exit: for settings that must stop the start. A process that started instead is
 * SIGKILLed after `killAfterMs`, and the caller's assertions on its exit then fail.
 */
export function startApiExpectingExit(
  env: Record<string, string>,
  options: { uploadDir: string; killAfterMs?: number },
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['services/api/dist/main.js'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        API_KEY: 'k',
        HOST: '127.0.0.1',
        PORT: '0',
        UPLOAD_DIR: options.uploadDir,
        LOG_LEVEL: 'silent',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.killAfterMs ?? 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
