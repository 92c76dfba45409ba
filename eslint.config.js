// typescript-eslint's recommended rules on the TypeScript, ESLint's on the plain ES modules (the
// page, benchmarks, scripts), and one architectural rule: the core stays pure (SPEC-level logic
// never reaches for the runtime or the queue).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

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
  { files: ['services/api/web/**/*.js'], languageOptions: { globals: globals.browser } },
  {
    files: ['bench/**/*.mjs', 'scripts/**/*.mjs', 'cluster/**/*.mjs', 'cli/bin/*.js', 'eslint.config.js'],
    languageOptions: { globals: globals.node },
  },
);
