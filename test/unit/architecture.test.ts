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
    expect(new Set(apiFiles.map(roomOf))).toEqual(new Set(['.', 'auth', 'http', 'jobs', 'plugins', 'query', 'routes', 'safra', 'tarefas']));
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

describe('the layers, enforced by lint (eslint.config.js)', () => {
  // Planted imports, linted as if they were in the file named: each points up a layer, and the
  // same line in a file of a higher layer is allowed (the rule is about direction, not names).
  const cases: Array<[string, string, boolean]> = [
    ['services/api/src/tarefas/service.ts', "import { x } from '../http/retorno-answers.js';", false],
    ['services/api/src/tarefas/model.ts', "import type { x } from '../jobs/runner.js';", false],
    ['services/api/src/tarefas/store.ts', "import { x } from '../routes/tarefas/intake.js';", false],
    ['services/api/src/http/uploads.ts', "import type { x } from '../tarefas/model.js';", false],
    ['services/api/src/jobs/in-process.ts', "import { x } from '../plugins/metrics.js';", false],
    ['services/api/src/plugins/page.ts', "import { x } from '../routes/health.js';", false],
    ['shared/src/runtime/config.ts', "import { x } from '@censo/api';", false],
    ['cli/src/lote.ts', "import { x } from '../../services/api/src/app.js';", false],
    ['services/api/web/lotes.js', "import { x } from '../src/app.js';", false],
    ['services/api/src/routes/tarefas/intake.ts', "import { x } from '../../http/uploads.js';", true],
    ['services/api/src/jobs/bullmq-tasks.ts', "import type { x } from '../tarefas/execution.js';", true],
    ['services/api/src/plugins/tarefas.ts', "import { x } from '../jobs/embedded-tasks.js';", true],
  ];
  it.each(cases)('%s: %s → allowed: %s', async (file, line, allowed) => {
    const { ESLint } = await import('eslint');
    const eslint = new ESLint({ cwd: ROOT });
    const [result] = await eslint.lintText(`${line}\nexport const y = x;\n`, { filePath: path.join(ROOT, file) });
    const arrows = result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
    if (allowed) expect(arrows).toEqual([]);
    else expect(arrows).toEqual([expect.stringContaining('An arrow up a layer.')]);
  });
});
