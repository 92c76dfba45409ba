// The core as it was at an earlier revision, built beside the current one, so that a section can
// run the same case on both builds in one run (alternating) instead of quoting an older run.
// Only `shared/` is rebuilt: its dependencies resolve from the repo's own node_modules, since the
// build lives under .bench/ inside the repo.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DATA, ROOT } from './lib.mjs';

/** The revision the "before" rows are built from: the tree before the Performance III memory work. */
export const BEFORE_REV = '7879009';

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
