import { defineConfig } from 'vitest/config';

// Tests import the workspace packages by name (@censo/shared, @censo/api, @censo/worker), which
// resolve to their compiled dist/: the suite exercises exactly the JavaScript that ships, and
// worker threads / sandboxed processors load real .js files. `npm test` builds first.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
