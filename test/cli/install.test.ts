// The README's one command that puts `censo` on the PATH from any folder: `npm install -g ./cli`
// from the repository (npm links the folder, so the workspace's @censo/shared is found from the
// repository's node_modules). Run here into a temporary prefix, never the machine's global one,
// and offline: it must not fetch anything (an @censo/* name from the registry would not be ours).
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { censo, ROOT } from './censo-process.js';

const runFile = promisify(execFile);
const basico = fixtureCases().find((c) => c.name === 'basico')!;

let prefix: string;
let elsewhere: string;
beforeAll(async () => {
  prefix = await mkdtemp(path.join(os.tmpdir(), 'censo-prefix-'));
  elsewhere = await mkdtemp(path.join(os.tmpdir(), 'censo-elsewhere-'));
});
afterAll(async () => {
  // The prefix holds links into the repository; rm removes the links, not what they point to.
  await rm(prefix, { recursive: true, force: true });
  await rm(elsewhere, { recursive: true, force: true });
});

it(
  '`npm install -g ./cli` puts censo on the PATH: --version and a real divergencias from another folder',
  { timeout: 180_000 },
  async () => {
    // npm run passes its own config down as npm_config_*; only the temporary prefix may apply here.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key)));
    await runFile('npm', ['install', '-g', './cli', '--offline', '--no-audit', '--no-fund'], {
      cwd: ROOT,
      env: { ...env, npm_config_prefix: prefix },
      timeout: 170_000,
    });
    const onPath = { command: ['censo'], cwd: elsewhere, env: { PATH: `${path.join(prefix, 'bin')}:${process.env.PATH ?? ''}` } };
    const { version } = JSON.parse(await readFile(path.join(ROOT, 'cli', 'package.json'), 'utf8')) as { version: string };
    const shown = await censo(['--version'], onPath);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout.toString()).toBe(`${version}\n`);

    await cp(basico.retorno.json, path.join(elsewhere, 'retorno.json'));
    const installed = await censo(['divergencias', 'retorno.json', '-o', 'divergencias.csv'], onPath);
    expect(installed).toMatchObject({ code: 0, stderr: '' });
    const direct = await censo(['divergencias', basico.retorno.json, '--format', 'csv']);
    expect(await readFile(path.join(elsewhere, 'divergencias.csv'))).toEqual(direct.stdout);
  },
);
