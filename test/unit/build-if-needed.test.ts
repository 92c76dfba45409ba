// The start commands' pre-script (scripts/build-if-needed.mjs, issue 34): a newcomer's
// `npm ci && npm start` builds when a workspace has no dist/ or one older than its sources; a
// lean install with dist/ starts as it is; nothing to start and nothing to build with stops.
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decide, workspaceState } from '../../scripts/build-if-needed.mjs';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'censo-build-if-needed-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Writes `file` under the temporary root with its modification time `secondsAgo` in the past. */
async function file(name: string, secondsAgo: number): Promise<void> {
  const full = path.join(root, name);
  await mkdir(path.dirname(full), { recursive: true });
  await writeFile(full, '');
  const when = new Date(Date.now() - secondsAgo * 1000);
  await utimes(full, when, when);
}

describe('workspaceState', () => {
  it('is missing without dist/, or with an empty one', async () => {
    await file('ws/src/main.ts', 100);
    expect(workspaceState(root, 'ws')).toBe('missing');
    await mkdir(path.join(root, 'ws/dist/sub'), { recursive: true });
    expect(workspaceState(root, 'ws')).toBe('missing');
  });

  it('is fresh when the compiled files are newer than every source, and without sources at all (a release)', async () => {
    await file('tsconfig.base.json', 300);
    await file('ws/tsconfig.json', 300);
    await file('ws/src/a/deep.ts', 200);
    await file('ws/dist/a/deep.js', 100);
    expect(workspaceState(root, 'ws')).toBe('fresh');
    await rm(path.join(root, 'ws/src'), { recursive: true });
    expect(workspaceState(root, 'ws')).toBe('fresh');
  });

  it('is stale when a source in a subfolder, its tsconfig or the base tsconfig changed after the build', async () => {
    await file('ws/dist/main.js', 100);
    await file('ws/src/a/deep.ts', 50);
    expect(workspaceState(root, 'ws')).toBe('stale');
    await file('ws/src/a/deep.ts', 200);
    await file('ws/tsconfig.json', 50);
    expect(workspaceState(root, 'ws')).toBe('stale');
    await file('ws/tsconfig.json', 200);
    await file('tsconfig.base.json', 50);
    expect(workspaceState(root, 'ws')).toBe('stale');
  });

  it("counts tsc -b's .tsbuildinfo as the time of the build (it rewrites only what a change affects)", async () => {
    await file('ws/dist/main.js', 300);
    await file('ws/src/main.ts', 200);
    await file('ws/tsconfig.tsbuildinfo', 100);
    expect(workspaceState(root, 'ws')).toBe('fresh');
  });
});

describe('decide', () => {
  it.each([
    [{ a: 'fresh', b: 'fresh' }, true, 'start'],
    [{ a: 'fresh', b: 'fresh' }, false, 'start'],
    [{ a: 'fresh', b: 'stale' }, true, 'build'],
    [{ a: 'missing', b: 'fresh' }, true, 'build'],
    [{ a: 'fresh', b: 'stale' }, false, 'warn'],
    [{ a: 'missing', b: 'stale' }, false, 'fail'],
  ] as const)('%o, compiler installed: %s → %s', (states, hasCompiler, expected) => {
    expect(decide(states, hasCompiler)).toBe(expected);
  });
});
