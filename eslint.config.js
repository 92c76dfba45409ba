// typescript-eslint's recommended rules on the TypeScript, ESLint's on the plain ES modules (the
// page, benchmarks, scripts), and one architectural rule: the core stays pure (SPEC-level logic
// never reaches for the runtime or the queue).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * One `no-restricted-imports` block per layer: `files` may not import a module whose specifier
 * names one of `above` as a path segment or a package (`../routes/x.js`, `@censo/api`). The core's
 * own purity rule below adds its patterns for shared/src/core.
 */
function layers(rules) {
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return rules.map(([files, above, message]) => ({
    files: [files],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: `(^|/)(${above.map(escape).join('|')})(/|$)`, message: `An arrow up a layer. ${message}` }] },
      ],
    },
  }));
}

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.bench/**', 'coverage/**', 'test/browser/.screenshots/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['**/*.ts'],
    rules: { '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }] },
  },
  {
    files: ['shared/src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/runtime/**', '**/queue/**', 'fastify', 'bullmq', 'ioredis', 'pg'],
              message: 'The core is pure: no runtime, queue, HTTP or database code.',
            },
          ],
        },
      ],
    },
  },
  // The allowed arrows (docs/desenvolvimento.md, "As camadas"): an import that points up a layer
  // fails lint, so `npm test` fails before the next engineer builds on it.
  ...layers([
    ['shared/src/{runtime,queue,storage}/**/*.ts', ['services', 'cli', '@censo/api'], 'shared/ knows nothing of the services or the CLI.'],
    [
      'services/api/src/tarefas/**/*.ts',
      ['http', 'jobs', 'plugins', 'routes', 'auth', 'query'],
      'tarefas/ is the domain: it owns the ports it needs (execution.ts) and imports no adapter, plugin or route.',
    ],
    [
      'services/api/src/http/**/*.ts',
      ['tarefas', 'jobs', 'plugins', 'routes'],
      'http/ is HTTP mechanics: no domain, no adapters, no routes.',
    ],
    [
      'services/api/src/jobs/**/*.ts',
      ['http', 'plugins', 'routes'],
      "jobs/ holds the execution adapters: they implement the domain's ports.",
    ],
    ['services/api/src/plugins/**/*.ts', ['routes'], 'plugins/ wire the app below its routes.'],
    ['services/worker/src/**/*.ts', ['@censo/api', 'services/api'], 'The worker runs jobs: it needs nothing of the API.'],
    [
      'cli/src/**/*.ts',
      ['services', '@censo/api', 'bullmq', 'ioredis', 'fastify'],
      'The CLI stands on shared/ alone (@censo/shared/local).',
    ],
    ['services/api/web/**/*.js', ['src', '@censo', 'shared', 'node:'], 'The page runs in the browser: nothing of the server.'],
  ]),
  { files: ['services/api/web/**/*.js'], languageOptions: { globals: globals.browser } },
  {
    files: ['bench/**/*.mjs', 'scripts/**/*.mjs', 'cluster/**/*.mjs', 'cli/bin/*.js', 'eslint.config.js'],
    languageOptions: { globals: globals.node },
  },
);
