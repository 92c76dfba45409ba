// The import rules docs/desenvolvimento.md states, read from the sources: nothing but the app's
// assembly imports the HTTP routes; the query and staff sign-in rooms stand alone; the worker and
// the CLI build on the shared package only, never on the API. The core's purity is eslint's rule.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findCycles } from '../../scripts/import-cycles.mjs';

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

  it('routes/ is imported only by app.ts and the entries index.ts and testing.ts (no domain module reaches for a route)', () => {
    const importers = apiFiles.filter((file) => roomOf(file) !== 'routes' && roomsImported(file).includes('routes'));
    expect(importers.sort()).toEqual([`${API}/app.ts`, `${API}/index.ts`, `${API}/testing.ts`]);
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

describe('no import circles in the core or the API (npm run lint: scripts/import-cycles.mjs)', () => {
  it.each(['shared/src/core', 'services/api/src'])('%s has none', (dir) => {
    expect(findCycles(path.join(ROOT, dir))).toEqual([]);
  });

  it('is part of npm run lint, for both folders', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.lint).toContain('node scripts/import-cycles.mjs shared/src/core services/api/src');
  });

  // A planted circle, the way today's was (a type imported both ways, through a folder), and one
  // through a re-export and a dynamic import: each is found; the same modules without it, not.
  const planted = mkdtempSync(path.join(os.tmpdir(), 'censo-cycles-'));
  afterAll(() => rmSync(planted, { recursive: true, force: true }));
  const plant = (name: string, files: Record<string, string>): string => {
    const dir = path.join(planted, name);
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    return dir;
  };

  it('finds a planted circle of types through a folder', () => {
    const dir = plant('types', {
      'types.ts': "import type { NaoAplicada } from './censo/corrigido.js';\nexport type Chave = NaoAplicada | string;\n",
      'censo/corrigido.ts': "import type { Chave } from '../types.js';\nexport type NaoAplicada = { chave: Chave };\n",
      'censo/txt.ts': "import type { Chave } from '../types.js';\nexport const t = (c: Chave) => c;\n",
    });
    expect(findCycles(dir)).toEqual([['censo/corrigido.ts', 'types.ts']]);
    writeFileSync(path.join(dir, 'types.ts'), 'export type Chave = string;\n');
    expect(findCycles(dir)).toEqual([]);
  });

  it('finds a circle through a re-export, an index and a dynamic import', () => {
    const dir = plant('longer', {
      'a.ts': "export * from './b/index.js';\n",
      'b/index.ts': "export { c } from '../c.js';\n",
      'c.ts': "export const c = () => import('./a.js');\n",
    });
    expect(findCycles(dir)).toEqual([['a.ts', 'b/index.ts', 'c.ts']]);
  });

  it('the lint step fails on a planted circle, naming it, and passes without one', () => {
    const dir = plant('lint', {
      'types.ts': "import type { Correcao } from './reimportacao/correcao.js';\nexport type Chave = Correcao | string;\n",
      'reimportacao/correcao.ts': "import type { Chave } from '../types.js';\nexport type Correcao = { chave: Chave };\n",
    });
    const lint = (...dirs: string[]) =>
      spawnSync(process.execPath, [path.join(ROOT, 'scripts/import-cycles.mjs'), ...dirs], { encoding: 'utf8' });
    const failed = lint(path.join(ROOT, 'services/api/src'), dir);
    expect([failed.status, failed.stdout, failed.stderr]).toEqual([
      1,
      '',
      `${dir}: import circle: reimportacao/correcao.ts → types.ts → reimportacao/correcao.ts\n`,
    ]);
    const clean = lint(path.join(ROOT, 'shared/src/core'), path.join(ROOT, 'services/api/src'));
    expect([clean.status, clean.stderr]).toEqual([0, '']);
  });
});

describe("@censo/api's public surface and its testing entry", () => {
  it('the seams the tests use are in @censo/api/testing only', async () => {
    const api = await import('@censo/api');
    const testing = await import('@censo/api/testing');
    const seams = Object.keys(testing).sort();
    expect(seams).toEqual([
      'MAX_QUIET_SKIP',
      'MISSED_END_MS',
      'Maintenance',
      'TarefasService',
      'checkWebhookDestination',
      'createMemoryStore',
      'createRedisStore',
      'deliverWebhook',
      'jsonListItems',
      'parseWebhookUrl',
    ]);
    expect(seams.filter((name) => name in api)).toEqual([]);
  });
});

describe('the mode is decided in one place (server.ts, through the task backend)', () => {
  it.each([...sources(`${API}/auth`), `${API}/plugins/rate-limit.ts`])('%s never asks the config for Redis', (file) => {
    expect(readFileSync(path.join(ROOT, file), 'utf8')).not.toMatch(/config\.redis\b|\bqueuePrefix\b/);
  });
});
