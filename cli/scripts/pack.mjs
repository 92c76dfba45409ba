// `npm run pack:cli`: the `censo` command as one .tgz an analyst installs without the repository
// (`npm install -g censo-cli-<versão>.tgz`, or `npx --package censo-cli-<versão>.tgz censo`). The
// package holds the compiled CLI, the compiled core it runs on (@censo/shared, only the part the
// CLI loads) and every package those need, all bundled: installing it reads nothing from a
// registry, so no unrelated package named like one of ours can ever be fetched in its place.
//
// `stageCli(folder)` lays the same package out unpacked; the test harness runs that copy when it
// must run `censo` as another user who cannot read the repository (test/cli/censo-process.ts).
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(ROOT, 'cli');
const SHARED = path.join(ROOT, 'shared');

/** Modules of the core that the CLI loads: its entry, and the job thread the pool loads by URL. */
const SHARED_ENTRIES = ['dist/local.js', 'dist/runtime/job-thread.js'];

/**
 * Files and folders of a package that nothing loads at run time: type declarations, source maps,
 * documents, tests and examples. Left out of the package (a fifth of its files), they are a fifth
 * less for every `npm install -g` and `npx` of it to unpack. The packages' LICENSE files stay.
 */
const NOT_LOADED = /^(?:.+\.(?:d\.[cm]?ts|map|md|markdown)|test|tests|__tests__|examples?|\.github)$/i;

const BARE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\)\(\s*)['"]([^'"]+)['"]/g;

/**
 * A compiled file without its comment lines: tsc keeps comments, and prose such as `tell "a" from
 * "changed since"` would read as an import. tsc writes every comment line starting with `//`,
 * `/*` or `*`, and no line of code starts so.
 */
const codeOf = (text) =>
  text
    .split('\n')
    .filter((line) => !/^\s*(?:\/\/|\/\*|\*)/.test(line))
    .join('\n');

const readJson = async (file) => JSON.parse(await readFile(file, 'utf8'));

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const isBuiltin = (specifier) => specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]);

/** Compiled files reachable from `entries` (relative imports followed), and the packages they import. */
async function closure(base, entries) {
  const files = new Set();
  const packages = new Set();
  const pending = entries.map((entry) => path.join(base, entry));
  while (pending.length > 0) {
    const file = pending.pop();
    if (files.has(file)) continue;
    files.add(file);
    for (const [, specifier] of codeOf(await readFile(file, 'utf8')).matchAll(BARE_IMPORT)) {
      if (specifier.startsWith('.')) pending.push(path.resolve(path.dirname(file), specifier));
      else if (!isBuiltin(specifier)) packages.add(packageName(specifier));
    }
  }
  return { files, packages };
}

/** Where Node finds package `name` from `from` (the nearest node_modules going up). */
async function packageDir(name, from) {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    const manifest = await readJson(path.join(candidate, 'package.json')).catch(() => null);
    if (manifest !== null) return { dir: candidate, manifest };
    if (dir === path.dirname(dir)) throw new Error(`pack: package ${name} not found from ${from}`);
  }
}

/**
 * Every package `roots` needs at run time: the folder each is found in under the repository's
 * node_modules, keyed by that folder, so a package two others need in different versions (npm
 * nests one of them) keeps the layout Node resolves it by. Optional dependencies are left out
 * (piscina's `@napi-rs/nice` is a per-platform binary it does without).
 */
async function dependencies(roots, from) {
  const found = new Map();
  const pending = roots.map((name) => ({ name, from }));
  while (pending.length > 0) {
    const { name, from: parent } = pending.pop();
    const { dir, manifest } = await packageDir(name, parent);
    if (found.has(dir)) continue;
    const relative = path.relative(ROOT, dir);
    if (!relative.startsWith(`node_modules${path.sep}`)) throw new Error(`pack: ${name} is not under the repository's node_modules`);
    found.set(dir, { name, relative, version: manifest.version });
    for (const dependency of Object.keys(manifest.dependencies ?? {})) pending.push({ name: dependency, from: dir });
  }
  return [...found.values()];
}

/** Copies the compiled JavaScript of `from` (no declarations or source maps: nothing loads them). */
async function copyJs(from, to) {
  for (const entry of await readdir(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const source = path.join(entry.parentPath, entry.name);
    const target = path.join(to, path.relative(from, source));
    await mkdir(path.dirname(target), { recursive: true });
    await cp(source, target);
  }
}

/**
 * The package, unpacked, in `folder/package`: bin/, dist/, package.json, and node_modules with
 * @censo/shared and every package the two need. Returns its path.
 */
export async function stageCli(folder) {
  const target = path.join(folder, 'package');
  const cliManifest = await readJson(path.join(CLI, 'package.json'));
  const sharedManifest = await readJson(path.join(SHARED, 'package.json'));
  const cliImports = await closure(path.join(CLI, 'dist'), ['main.js']);
  const sharedImports = await closure(SHARED, SHARED_ENTRIES);
  for (const name of cliImports.packages) {
    if (name !== sharedManifest.name && !(name in (cliManifest.dependencies ?? {}))) {
      throw new Error(`pack: the CLI imports ${name}, which cli/package.json does not list`);
    }
  }
  cliImports.packages.delete(sharedManifest.name);
  const packages = await dependencies([...cliImports.packages, ...sharedImports.packages], CLI);
  const topLevel = (name) => packages.find((p) => p.relative === path.join('node_modules', ...name.split('/')));

  await mkdir(target, { recursive: true });
  await cp(path.join(CLI, 'bin'), path.join(target, 'bin'), { recursive: true });
  await copyJs(path.join(CLI, 'dist'), path.join(target, 'dist'));
  // The core: only the files the CLI reaches, under a manifest that exports only what it imports.
  const shared = path.join(target, 'node_modules', ...sharedManifest.name.split('/'));
  for (const file of sharedImports.files) {
    await mkdir(path.dirname(path.join(shared, path.relative(SHARED, file))), { recursive: true });
    await cp(file, path.join(shared, path.relative(SHARED, file)));
  }
  await writeFile(
    path.join(shared, 'package.json'),
    `${JSON.stringify(
      {
        name: sharedManifest.name,
        version: sharedManifest.version,
        type: 'module',
        exports: { './local': './dist/local.js' },
        dependencies: Object.fromEntries([...sharedImports.packages].sort().map((name) => [name, topLevel(name).version])),
      },
      null,
      2,
    )}\n`,
  );
  for (const { relative } of packages) {
    const dir = path.join(ROOT, relative);
    await cp(dir, path.join(target, relative), {
      recursive: true,
      filter: (source) => {
        const parts = path.relative(dir, source).split(path.sep);
        // Its own nested node_modules holds only what is copied above by itself, when needed.
        return !parts.includes('node_modules') && !parts.some((part) => NOT_LOADED.test(part));
      },
    });
  }
  // The packages at the top of node_modules: npm bundles them with what is nested inside them.
  const top = packages.filter(({ name, relative }) => relative === path.join('node_modules', ...name.split('/')));
  const bundled = [sharedManifest.name, ...top.map(({ name }) => name).sort()];
  const versions = {
    [sharedManifest.name]: sharedManifest.version,
    ...Object.fromEntries(top.map(({ name, version }) => [name, version])),
  };
  await writeFile(
    path.join(target, 'package.json'),
    `${JSON.stringify(
      {
        name: cliManifest.name,
        version: cliManifest.version,
        description: cliManifest.description,
        type: 'module',
        bin: cliManifest.bin,
        engines: { node: '>=20.6' },
        dependencies: Object.fromEntries(bundled.map((name) => [name, versions[name]])),
        bundleDependencies: bundled,
      },
      null,
      2,
    )}\n`,
  );
  return target;
}

/** Builds the .tgz into `destination`; returns its path. */
export async function packCli(destination) {
  const stage = await mkdtemp(path.join(os.tmpdir(), 'censo-pack-'));
  try {
    const folder = await stageCli(stage);
    const { stdout } = await promisify(execFile)(
      process.platform === 'win32' ? 'npm.cmd' : 'npm',
      ['pack', '--pack-destination', path.resolve(destination), '--ignore-scripts', '--json'],
      { cwd: folder, shell: process.platform === 'win32' },
    );
    const [{ filename }] = JSON.parse(stdout);
    return path.join(path.resolve(destination), filename.replace(/^@/, '').replace(/\//, '-'));
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = await packCli(process.argv[2] ?? process.cwd());
  process.stdout.write(`${file}\n`);
}
