import os from 'node:os';
import { defineConfig } from 'vitest/config';

// Tests import the workspace packages by name (@censo/shared, @censo/api, @censo/worker), which
// resolve to their compiled dist/: the suite exercises exactly the JavaScript that ships, and
// worker threads / sandboxed processors load real .js files. `npm test` builds first.
//
// Four groups, one after the other. The unit and in-process HTTP files run two at a time even on
// 2 cores (vitest's default there is one): they mostly wait on sockets and deadlines. The files
// that start processes, Redis topologies or Chromium and time their failovers and drains run one
// at a time (two at a time made a worker's SIGTERM drain and a Sentinel failover miss their
// bounds). The fault suite in network namespaces times recovery against its own healthy
// baseline, so it runs last, alone.
const ALONE = ['test/integration/cluster.test.ts'];
const IN_PROCESS = ['test/unit/**/*.test.ts', 'test/http/**/*.test.ts'];
// Files that start processes but time nothing against a bound (the CLI run as a user runs it, the
// installs, the documents' examples, the deployment files' own tools): two at a time, like the
// in-process files. The Redis recipe times a Sentinel failover, so it stays with the one-at-a-time files.
const PROCESSES_TWO_AT_A_TIME = [
  'test/cli/**/*.test.ts',
  'test/integration/tarefas-cli.test.ts',
  'test/integration/lean-install.test.ts',
  'test/integration/docs-examples.test.ts',
  'test/integration/progresso.test.ts',
  'test/integration/strict-logs.test.ts',
  'test/integration/embedded-priority.test.ts',
  'test/integration/contract-version.test.ts',
  'test/integration/s3-lifecycle.test.ts',
  'test/integration/storage-s3.test.ts',
  'test/integration/tarefas-s3.test.ts',
  'test/integration/query.test.ts',
  'test/integration/query-declarations.test.ts',
  'test/deploy/kubernetes.test.ts',
  'test/deploy/vm.test.ts',
  'test/deploy/monitoring.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'in-process', include: IN_PROCESS, maxWorkers: Math.max(2, os.availableParallelism()), sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: 'processes-2',
          include: PROCESSES_TWO_AT_A_TIME,
          maxWorkers: Math.max(2, os.availableParallelism()),
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: ['test/**/*.test.ts'],
          exclude: [...IN_PROCESS, ...PROCESSES_TWO_AT_A_TIME, ...ALONE],
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 3 } } },
    ],
  },
});
