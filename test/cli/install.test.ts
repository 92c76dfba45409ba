// The two ways to put `censo` on the PATH. From the repository: `npm install -g ./cli` (npm links
// the folder, so the workspace's @censo/shared is found from the repository's node_modules).
// Without it: the .tgz of `npm run pack:cli`, which bundles the core and every package, for an
// analyst's machine (docs/cli.md). Both run here into a temporary prefix, never the machine's
// global one, and offline: nothing may be fetched (an @censo/* or `censo` name from the registry
// would not be ours).
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { censo, ROOT } from './censo-process.js';
import { onThisMachine } from '../helpers/deadline.js';

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
  { timeout: onThisMachine(180_000) },
  async () => {
    // npm run passes its own config down as npm_config_*; only the temporary prefix may apply here.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key)));
    await runFile('npm', ['install', '-g', './cli', '--offline', '--no-audit', '--no-fund'], {
      cwd: ROOT,
      env: { ...env, npm_config_prefix: prefix },
      timeout: onThisMachine(170_000),
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

it(
  '`npm run pack:cli` makes one .tgz that installs and runs with the repository out of reach: npm install -g offline into a prefix, npx --package',
  { timeout: onThisMachine(400_000) },
  async () => {
    const packs = await mkdtemp(path.join(os.tmpdir(), 'censo-pack-test-'));
    try {
      // The script `npm run pack:cli` runs after building; the suite has built already.
      const { stdout } = await runFile(process.execPath, [path.join(ROOT, 'cli', 'scripts', 'pack.mjs'), packs], {
        timeout: onThisMachine(200_000),
      });
      const tgz = stdout.trim();
      expect(path.dirname(tgz)).toBe(packs);
      expect(path.basename(tgz)).toMatch(/^censo-cli-\d+\.\d+\.\d+\.tgz$/);
      // Nothing that no one loads (declarations, source maps, documents, tests), and every bundled
      // package's licence kept: exceljs's, whose package holds both, stands for them.
      const entries = (await runFile('tar', ['-tzf', tgz], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      expect(entries.filter((entry) => /\.(d\.[cm]?ts|map|md)$|\/(test|tests|examples?)\//i.test(entry))).toEqual([]);
      expect(entries).toContain('package/node_modules/exceljs/LICENSE');
      expect(entries).toContain('package/node_modules/exceljs/package.json');
      await cp(basico.retorno.xlsx, path.join(elsewhere, 'retorno.xlsx'));
      const installed = path.join(packs, 'prefixo');
      // A mount namespace of this command alone hides the repository under an empty tmpfs: the
      // install and the runs can read nothing of it. An empty npm cache and --offline: nothing
      // comes from a registry, so no unrelated package named `censo` can stand in for ours.
      // The two installs are independent (a folder each; npm's cache takes concurrent writers), so
      // they run side by side: each unpacks thousands of files, most of this test's time.
      const script = [
        'set -e',
        'mount -t tmpfs tmpfs "$REPO"',
        'test ! -e "$REPO/package.json"',
        'cd "$ELSEWHERE"',
        'npm install -g "$TGZ" --offline --prefix "$PREFIX" --no-audit --no-fund --loglevel=error >&2 & global=$!',
        'npx --offline --yes --package "$TGZ" censo --version > "$NPX_OUT" & npx=$!',
        'wait "$global"',
        'wait "$npx"',
        '"$PREFIX/bin/censo" divergencias retorno.xlsx --format csv',
        'cat "$NPX_OUT"',
      ].join('\n');
      const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key)));
      const unshare = process.getuid?.() === 0 ? ['--mount'] : ['--user', '--map-root-user', '--mount'];
      const run = await runFile('unshare', [...unshare, 'sh', '-c', script], {
        env: {
          ...env,
          REPO: ROOT,
          TGZ: tgz,
          PREFIX: installed,
          ELSEWHERE: elsewhere,
          NPX_OUT: path.join(packs, 'npx-version'),
          npm_config_cache: path.join(packs, 'cache-npm'),
          npm_config_update_notifier: 'false',
        },
        timeout: onThisMachine(380_000),
        maxBuffer: 16 * 1024 * 1024,
      });
      const direct = await censo(['divergencias', basico.retorno.xlsx, '--format', 'csv']);
      const { version } = JSON.parse(await readFile(path.join(ROOT, 'cli', 'package.json'), 'utf8')) as { version: string };
      expect(run.stdout).toBe(`${direct.stdout.toString()}${version}\n`);
    } finally {
      await rm(packs, { recursive: true, force: true });
    }
  },
);
