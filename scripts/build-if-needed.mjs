#!/usr/bin/env node
// The start commands' pre-script (prestart, prestart:api, prestart:worker): compiles only when a
// workspace the command runs has no dist/ or a dist/ older than its sources, and only if the
// compiler is installed. So `npm ci && npm start` still builds for a newcomer, while a lean
// install (`npm ci --omit=dev` on a tree that has dist/, as a release or an image's build stage
// gives it) starts without any compiler (SPEC §9, issue 34).
//   node scripts/build-if-needed.mjs <workspace>...   e.g. shared services/worker
// Exit 0: nothing to do, or built. Exit 1: one line on stderr (no dist and no compiler), or the
// compiler's own exit code when the build fails.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function mtimeOf(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** The newest modification time of any file under `dir` (0 when there is none). */
function newestUnder(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(full) : mtimeOf(full));
  }
  return newest;
}

/**
 * 'missing' (no compiled file), 'stale' (a source or setting changed after the last build) or
 * 'fresh'. `tsc -b` rewrites what a change affects and its .tsbuildinfo; a release has no
 * .tsbuildinfo, only dist/, so either counts as the time of the build.
 */
export function workspaceState(root, workspace) {
  const dir = path.join(root, workspace);
  const compiled = newestUnder(path.join(dir, 'dist'));
  if (compiled === 0) return 'missing';
  const built = Math.max(compiled, mtimeOf(path.join(dir, 'tsconfig.tsbuildinfo')));
  const sources = Math.max(
    newestUnder(path.join(dir, 'src')),
    mtimeOf(path.join(dir, 'tsconfig.json')),
    mtimeOf(path.join(root, 'tsconfig.base.json')),
  );
  return sources > built ? 'stale' : 'fresh';
}

/**
 * What to do for these workspaces' states: 'start' as they are, 'build', 'warn' (stale, but
 * nothing to build with: the dist/ there is what this install was given) or 'fail'.
 */
export function decide(states, hasCompiler) {
  const values = Object.values(states);
  if (values.every((state) => state === 'fresh')) return 'start';
  if (hasCompiler) return 'build';
  return values.includes('missing') ? 'fail' : 'warn';
}

/** The compiler's entry point, or null when it is not installed (a lean install). */
export function findCompiler(root) {
  try {
    return createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return null;
  }
}

/**
 * The line said as the build starts: the first `npm start` compiles for about 30 s and, silent,
 * looked hung (issue 50). A rebuild after a change is its own case, not the first time.
 */
export function buildNotice(states) {
  return Object.values(states).includes('missing')
    ? 'Compilando o serviço (só na primeira vez, cerca de 30 s)…'
    : 'Compilando o serviço de novo (o código mudou desde a última compilação)…';
}

function main(workspaces) {
  if (workspaces.length === 0) {
    console.error('build-if-needed: name the workspaces the command runs, e.g. shared services/worker');
    return 2;
  }
  const states = Object.fromEntries(workspaces.map((workspace) => [workspace, workspaceState(ROOT, workspace)]));
  const compiler = findCompiler(ROOT);
  const named = (state) => workspaces.filter((workspace) => states[workspace] === state).join(', ');
  switch (decide(states, compiler !== null)) {
    case 'start':
      return 0;
    case 'warn':
      console.error(
        `censo: ${named('stale')} compiled before the last change of its sources and TypeScript is not installed; starting the compiled code as it is`,
      );
      return 0;
    case 'fail':
      console.error(
        `censo: ${named('missing')} not compiled (no dist/) and TypeScript is not installed: run npm ci and npm run build, or install a release that has dist/`,
      );
      return 1;
    case 'build': {
      // The whole build, as `npm run build`: the CLI is then ready too, as it was before.
      // On stderr, where the other lines of this script go: stdout may be a script's to read.
      console.error(buildNotice(states));
      const build = spawnSync(process.execPath, [compiler, '-b'], { cwd: ROOT, stdio: 'inherit' });
      return build.status ?? 1;
    }
  }
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exit(main(process.argv.slice(2)));
