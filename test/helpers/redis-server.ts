// A redis-server of a test's own, for tests that stop, pause or kill it: the shared local Redis
// cannot be touched while other test files use it.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

/** A throwaway redis-server: no persistence, killed by the test, restartable on the same port. */
export async function startRedisServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => {
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
  });
  const gaveUp = new AbortController();
  const timeout = sleep(10_000, undefined, { signal: gaveUp.signal }).then(() => {
    throw new Error(`redis-server not ready: ${output}`);
  });
  try {
    await Promise.race([ready, timeout]);
  } finally {
    gaveUp.abort(); // the timer must not hold the test process for 10 s once the race is settled
    timeout.catch(() => undefined);
  }
  return child;
}

export async function stopRedisServer(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
