// Issue 50: the first `npm start` compiled for ~33 s without a word. The pre-script
// (scripts/build-if-needed.mjs) says so on stderr as the build starts: run here as npm runs it, in
// a tree of its own whose "compiler" only records that it ran, so the line is seen before it.
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildNotice } from '../../scripts/build-if-needed.mjs';

const SCRIPT = new URL('../../scripts/build-if-needed.mjs', import.meta.url);
const FIRST_TIME = 'Compilando o serviço (só na primeira vez, cerca de 30 s)…';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'censo-build-notice-'));
  await mkdir(path.join(root, 'scripts'));
  await copyFile(SCRIPT, path.join(root, 'scripts/build-if-needed.mjs'));
  await writeFile(path.join(root, 'package.json'), '{"name":"arvore","private":true}\n');
  // A stand-in for tsc: it writes the workspace's dist/ and notes that it ran after the line.
  await mkdir(path.join(root, 'node_modules/typescript/bin'), { recursive: true });
  await writeFile(path.join(root, 'node_modules/typescript/package.json'), '{"name":"typescript","version":"0.0.0"}\n');
  await writeFile(
    path.join(root, 'node_modules/typescript/bin/tsc'),
    `const fs = require('node:fs');
fs.mkdirSync('ws/dist', { recursive: true });
fs.writeFileSync('ws/dist/main.js', '');
process.stderr.write('tsc ran\\n');
`,
  );
  await mkdir(path.join(root, 'ws/src'), { recursive: true });
  await writeFile(path.join(root, 'ws/src/main.ts'), '');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const run = () => spawnSync(process.execPath, [path.join(root, 'scripts/build-if-needed.mjs'), 'ws'], { cwd: root, encoding: 'utf8' });

describe('scripts/build-if-needed.mjs tells why the first start waits', () => {
  it('says it is compiling, on stderr, before the compiler runs; nothing on stdout', async () => {
    const first = run();
    expect(first.status).toBe(0);
    expect(first.stdout).toBe('');
    expect(first.stderr.split('\n').filter(Boolean)).toEqual([FIRST_TIME, 'tsc ran']);
    expect(await readFile(path.join(root, 'ws/dist/main.js'), 'utf8')).toBe('');
  });

  it('says nothing when there is nothing to compile', () => {
    expect(run().status).toBe(0);
    const second = run();
    expect(second.status).toBe(0);
    expect(second.stderr).toBe('');
  });

  it('a rebuild after a change is not called the first time', () => {
    expect(buildNotice({ shared: 'missing', 'services/api': 'stale' })).toBe(FIRST_TIME);
    expect(buildNotice({ shared: 'stale', 'services/api': 'fresh' })).toBe(
      'Compilando o serviço de novo (o código mudou desde a última compilação)…',
    );
  });
});
