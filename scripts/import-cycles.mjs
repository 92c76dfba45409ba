// Import circles among a folder's TypeScript modules: relative imports and re-exports, static,
// `import type` and dynamic alike, since a circle of types still ties the modules' meanings
// together and a later value import turns it into an evaluation-order bug.
// `npm run lint` runs it on the core and on the API (`node scripts/import-cycles.mjs DIR...`):
// it prints each circle and exits 1 when there is one. test/unit/architecture.test.ts proves it
// finds a planted one.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** Every .ts module below `dir` (declaration files aside), absolute. */
function modules(dir) {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => path.join(dir, file));
}

/** The modules of the folder that `file` imports: `./x.js` is `./x.ts`, `./x` may be a folder's index. */
function edges(file, known) {
  const out = new Set();
  for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
    const target = path.resolve(path.dirname(file), match[1]).replace(/\.js$/, '.ts');
    const found = [target, `${target}.ts`, path.join(target, 'index.ts')].find((candidate) => known.has(candidate));
    if (found) out.add(found);
  }
  return out;
}

/**
 * The circles among `dir`'s modules, each as the modules on it, relative to `dir`, starting from
 * the first in alphabetical order. Empty when the imports form no circle.
 */
export function findCycles(dir) {
  const root = path.resolve(dir);
  const files = modules(root);
  const known = new Set(files);
  const graph = new Map(files.map((file) => [file, edges(file, known)]));
  const circles = new Map();
  const done = new Set();
  const stack = [];
  const onStack = new Set();
  const visit = (file) => {
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)) {
      if (onStack.has(next)) {
        const circle = stack.slice(stack.indexOf(next)).map((f) => path.relative(root, f).split(path.sep).join('/'));
        const first = circle.indexOf([...circle].sort()[0]);
        const rotated = [...circle.slice(first), ...circle.slice(0, first)];
        circles.set(rotated.join(' → '), rotated);
      } else if (!done.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    onStack.delete(file);
    done.add(file);
  };
  for (const file of [...files].sort()) if (!done.has(file)) visit(file);
  return [...circles.values()];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let found = 0;
  for (const dir of process.argv.slice(2)) {
    for (const circle of findCycles(dir)) {
      found++;
      console.error(`${dir}: import circle: ${[...circle, circle[0]].join(' → ')}`);
    }
  }
  process.exitCode = found > 0 ? 1 : 0;
}
