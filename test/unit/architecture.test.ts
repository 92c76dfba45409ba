// The import rules docs/desenvolvimento.md states, read from the sources: nothing but the app's
// assembly imports the HTTP routes; the query and staff sign-in rooms stand alone; the worker and
// the CLI build on the shared package only, never on the API. The core's purity is eslint's rule.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every .ts file below `dir`, relative to the repository. */
function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.posix.join(dir, file.split(path.sep).join('/')));
}

/** The module specifiers a file imports or re-exports, statically or dynamically. */
function imports(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)].map((m) => m[1]!);
}

const API = 'services/api/src';

/** The room of an API file: its first folder below src, or `.` for the files at the top. */
function roomOf(file: string): string {
  const [first, ...rest] = path.posix.relative(API, file).split('/');
  return rest.length === 0 ? '.' : first!;
}

/** The rooms of the API a file reaches through its relative imports. */
function roomsImported(file: string): string[] {
  return imports(file)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => roomOf(path.posix.join(path.posix.dirname(file), specifier)));
}

const apiFiles = sources(API);

describe('what each room of services/api/src may import', () => {
  it('finds the rooms', () => {
    expect(new Set(apiFiles.map(roomOf))).toEqual(new Set(['.', 'auth', 'http', 'jobs', 'plugins', 'query', 'routes', 'tarefas']));
  });

  it('routes/ is imported only by app.ts and index.ts (no domain module reaches for a route)', () => {
    const importers = apiFiles.filter((file) => roomOf(file) !== 'routes' && roomsImported(file).includes('routes'));
    expect(importers.sort()).toEqual([`${API}/app.ts`, `${API}/index.ts`]);
  });

  it.each(['query', 'auth'])('%s/ imports no other room of the API', (room) => {
    const outside = apiFiles
      .filter((file) => roomOf(file) === room)
      .flatMap((file) =>
        roomsImported(file)
          .filter((other) => other !== room)
          .map((other) => `${file} → ${other}/`),
      );
    expect(outside).toEqual([]);
  });
});

describe('the packages', () => {
  it.each(['services/worker/src', 'cli/src', 'shared/src'])('%s uses no workspace package but @censo/shared', (dir) => {
    const used = sources(dir).flatMap((file) => imports(file).filter((s) => s.startsWith('@censo/') && !/^@censo\/shared(\/|$)/.test(s)));
    expect(used).toEqual([]);
  });
});
