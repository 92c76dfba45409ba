// bench/gen-big.mjs as a command: help and usage errors, never a stack trace.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const GEN = fileURLToPath(new URL('../../bench/gen-big.mjs', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [GEN, ...args], { encoding: 'utf8' });

describe('gen-big command line', () => {
  it('--help prints the usage and exits 0', () => {
    const result = run('--help');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^usage: node bench\/gen-big\.mjs/);
    expect(result.stderr).toBe('');
  });

  it.each([['--bogus'], ['--persons', 'many'], ['--formats', 'txt,pdf']])('%s is a usage error (exit 2), no stack', (...args) => {
    const result = run(...args);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^gen-big: .+\nusage: /);
    expect(result.stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });
});
