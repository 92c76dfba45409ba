// Runs one of cluster/'s scripts (the fault suite, the scale profile) as an operator would, with a
// deadline: SIGTERM `termBeforeMs` before `limitMs` (the script tears its namespaces and processes
// down on it), SIGKILL `killAfterMs` later. Its output is kept for the assertion messages.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ScriptRun {
  readonly code: number | null;
  readonly output: string;
}

export async function runClusterScript(
  script: string,
  args: readonly string[],
  { limitMs, termBeforeMs, killAfterMs }: { readonly limitMs: number; readonly termBeforeMs: number; readonly killAfterMs: number },
): Promise<ScriptRun> {
  const child = spawn(process.execPath, [path.join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => {
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), killAfterMs).unref();
  }, limitMs - termBeforeMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, output };
}
