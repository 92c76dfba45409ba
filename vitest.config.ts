import os from 'node:os';
import { defineConfig } from 'vitest/config';

// The fault suite in network namespaces times recovery against its own healthy baseline: it runs
// after everything else, alone, so no other test file's load lands in one phase and not another.
const ALONE = ['test/integration/cluster.test.ts'];

// Tests import the workspace packages by name (@censo/shared, @censo/api, @censo/worker), which
// resolve to their compiled dist/: the suite exercises exactly the JavaScript that ships, and
// worker threads / sandboxed processors load real .js files. `npm test` builds first.
//
// Two test files at a time even on 2 cores (vitest's default there is one): most of the suite's
// time is spent waiting on child processes, sockets and deadlines, and one at a time took over
// 12 minutes.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: ALONE,
          maxWorkers: Math.max(2, os.availableParallelism()),
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
