// Runs before every test file, in its own context even when several files share a process
// (vitest.config.ts): the helpers' end-of-file cleanups (test/helpers/file-end.ts), and, with
// TEST_CPU_LOG=<file>, one line per test file with its wall time and the CPU it cost.
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect } from 'vitest';
import { endFile } from './helpers/file-end.js';

/**
 * CPU seconds of this process and of the children it has reaped (what the file started and waited
 * for: services, the `censo` command, npm, Chromium, redis-server), from /proc (Linux).
 */
function cpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  // After the command's closing parenthesis: field 3 (state) first; utime, stime, cutime and cstime are 14-17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [11, 12, 13, 14].reduce((sum, at) => sum + Number(fields[at]), 0) / 100;
}

const cpuLog = process.env.TEST_CPU_LOG;
if (cpuLog) {
  const startedAt = Date.now();
  const cpuAtStart = cpuSeconds();
  // Registered before endFile: after-all hooks run last-registered first, so this one counts the cleanups too.
  afterAll(() => {
    const name = path.relative(process.cwd(), expect.getState().testPath ?? '?');
    const line = {
      file: name,
      wall: (Date.now() - startedAt) / 1000,
      cpu: Number((cpuSeconds() - cpuAtStart).toFixed(2)),
      start: new Date(startedAt).toISOString(),
    };
    appendFileSync(cpuLog, `${JSON.stringify(line)}\n`);
  });
}

afterAll(endFile);
