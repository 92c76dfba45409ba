// The code as it was at an earlier revision, built beside the current one, so that a section can
// run the same case on both builds in one run (alternating) instead of quoting an older run.
// `sharedAt` and `cliAt` rebuild the core (and the CLI) alone: their dependencies resolve from the
// repo's own node_modules, since the build lives under .bench/ inside the repo. `treeAt` rebuilds
// the whole service (core, API, worker, CLI) with a node_modules of its own, for section 6.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DATA, ROOT } from './lib.mjs';

/** The revision the "before" rows are built from: the tree before the Performance III memory work. */
export const BEFORE_REV = '7879009';

/**
 * The last release, recorded in the repo while it has no `v*` tag: what section 0 (bench/release.mjs)
 * compares the current tree with when neither `--release <ref>` nor a `v*` tag reachable from HEAD
 * names one. 548c99c is the tree before issue 46's `correcao` (the release issue 58 measures against).
 */
export const RELEASE_REV = '548c99c';

/**
 * The revision section 6's "before" runs on: the last commit before issue 47's work on scale (it was
 * c9bb2d0, before issue 35's, until that wave's figures were in).
 */
export const BURST_BEFORE_REV = '30ac0dd';

/** The workspace folders a service tree needs (its projects and their shared files). */
const TREE_PARTS = ['shared', 'services', 'cli'];

/**
 * The whole service (core, API, worker, CLI) as it was at `rev`, extracted and built under
 * `.bench/tree-<rev>/` (built once, then reused). Its `node_modules` is its own: a symlink to each
 * of the repo's `node_modules/*`, except `@censo`, whose workspace packages point into the
 * extracted tree, so that the old API and worker import the old core and the old CLI its own
 * (nothing resolves to the current workspace). Returns the three entry points.
 */
export function treeAt(rev = BURST_BEFORE_REV) {
  const dir = path.join(DATA, `tree-${rev}`);
  const built = {
    rev,
    dir,
    apiMain: path.join(dir, 'services', 'api', 'dist', 'main.js'),
    workerMain: path.join(dir, 'services', 'worker', 'dist', 'main.js'),
    cliMain: path.join(dir, 'cli', 'dist', 'main.js'),
  };
  // Written last, after a build that succeeded: a half-made tree (an interrupted run) is made again.
  const stamp = path.join(dir, '.built');
  const commit = execFileSync('git', ['rev-parse', `${rev}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === commit) return built;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const top = execFileSync('git', ['ls-tree', '--name-only', commit], { cwd: ROOT, encoding: 'utf8' }).split('\n');
  const files = top.filter((name) => name === 'package.json' || /^tsconfig.*\.json$/.test(name));
  const archive = execFileSync('git', ['archive', commit, '--', ...TREE_PARTS, ...files], { cwd: ROOT, maxBuffer: 256 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive, maxBuffer: 256 * 1024 * 1024 });

  const modules = path.join(ROOT, 'node_modules');
  const own = path.join(dir, 'node_modules');
  mkdirSync(path.join(own, '@censo'), { recursive: true });
  for (const name of readdirSync(modules)) {
    if (name === '@censo') continue;
    symlinkSync(path.join(modules, name), path.join(own, name));
  }
  // The repo's links are relative (`../../services/api`): the same link inside the tree names the
  // tree's folder. A workspace the tree lacks (test/) is left out.
  for (const name of readdirSync(path.join(modules, '@censo'))) {
    const target = readlinkSync(path.join(modules, '@censo', name));
    if (path.isAbsolute(target)) throw new Error(`node_modules/@censo/${name} is an absolute link (${target})`);
    if (existsSync(path.resolve(own, '@censo', target))) symlinkSync(target, path.join(own, '@censo', name));
  }

  // A workspace's own node_modules (a package npm could not hoist, such as a pinned version the
  // root cannot hold: @fastify/static under services/api) is linked into the tree's same folder.
  for (const project of ['shared', 'services/worker', 'services/api', 'cli']) {
    const nested = path.join(ROOT, project, 'node_modules');
    if (!existsSync(nested) || !existsSync(path.join(dir, project))) continue;
    mkdirSync(path.join(dir, project, 'node_modules'), { recursive: true });
    for (const name of readdirSync(nested)) {
      if (name === '.bin') continue;
      symlinkSync(path.join(nested, name), path.join(dir, project, 'node_modules', name));
    }
  }

  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-b', dir], { cwd: dir, stdio: 'inherit' });
  } catch {
    // The old sources against today's packages may not type-check: emit each project unchecked.
    for (const project of ['shared', 'services/worker', 'services/api', 'cli'])
      execFileSync(process.execPath, [tsc, '-p', path.join(dir, project), '--noCheck'], { cwd: dir, stdio: 'inherit' });
  }
  for (const entry of [built.apiMain, built.workerMain, built.cliMain])
    if (!existsSync(entry)) throw new Error(`the tree at ${rev} built without ${path.relative(dir, entry)}`);
  writeFileSync(stamp, `${commit}\n`);
  return built;
}

/** Path of `shared/dist/local.js` (the core alone) built at `rev` (built once, then reused). */
export function sharedAt(rev = BEFORE_REV) {
  const dir = path.join(DATA, `before-${rev}`);
  const entry = path.join(dir, 'shared', 'dist', 'local.js');
  if (existsSync(entry)) return entry;
  mkdirSync(dir, { recursive: true });
  const archive = execFileSync('git', ['archive', rev, 'shared', 'tsconfig.base.json'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(dir, 'shared')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return entry;
}

/**
 * Path of `cli/dist/main.js` built at `rev`, beside that revision's core (sharedAt). Its imports of
 * `@censo/shared` resolve to the workspace's own build unless the process runs with
 * `--import bench/shared-hooks.mjs` and BENCH_SHARED_DIST naming the same revision's core (as
 * bench/cli.mjs runs it); its types are not checked against the current core's (`--noCheck`).
 */
export function cliAt(rev = BEFORE_REV) {
  const dir = path.join(DATA, `before-${rev}`);
  const built = { entry: path.join(dir, 'cli', 'dist', 'main.js'), sharedDist: path.dirname(sharedAt(rev)) };
  if (existsSync(built.entry)) return built;
  const archive = execFileSync('git', ['archive', rev, 'cli'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(dir, 'cli'), '--noCheck'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return built;
}

/**
 * The current build of services/api with services/api/src/heap-tuning.ts emptied: the same code
 * without its collector settings, for the Node 24 span (copied afresh each time, so it is always
 * the build being measured). Returns its `main.js`.
 */
export function apiWithoutHeapTuning() {
  const dir = path.join(DATA, 'api-untuned');
  rmSync(dir, { recursive: true, force: true });
  for (const part of ['dist', 'web', 'queries', 'package.json'])
    cpSync(path.join(ROOT, 'services', 'api', part), path.join(dir, part), { recursive: true });
  // main.ts imports it only for its effect: an empty module is the API without the settings.
  writeFileSync(path.join(dir, 'dist', 'heap-tuning.js'), '');
  return path.join(dir, 'dist', 'main.js');
}
