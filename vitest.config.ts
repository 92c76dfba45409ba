import os from 'node:os';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

// Tests import the workspace packages by name (@censo/shared, @censo/api, @censo/worker), which
// resolve to their compiled dist/: the suite exercises exactly the JavaScript that ships, and
// worker threads / sandboxed processors load real .js files. `npm test` builds first.
//
// Three groups, one after the other. Most files run two at a time even on 2 cores (vitest's
// default there is one): the unit and in-process HTTP files, the CLI run as a user runs it, the
// installs, the documents' examples, the deployment files' own tools and the staff page in
// Chromium mostly wait on sockets, processes and the browser, and time nothing against a bound.
// The files that time Redis failovers, a worker's SIGTERM drain or a recovery against a bound run
// one at a time (two at a time made a drain and a Sentinel failover miss their bounds). The fault
// suite in network namespaces times recovery against its own healthy baseline, so it runs last, alone.
const ALONE = ['test/integration/cluster.test.ts'];
const ONE_AT_A_TIME = [
  'test/deploy/redis-recipe.test.ts',
  'test/deploy/queue-metrics.test.ts',
  'test/integration/embedded-footprint.test.ts',
  'test/integration/faults.test.ts',
  'test/integration/heap-tuning.test.ts',
  'test/integration/queue.test.ts',
  'test/integration/rate-limit-redis.test.ts',
  'test/integration/readyz-redis.test.ts',
  'test/integration/redis-cluster.test.ts',
  'test/integration/redis-failover-metric.test.ts',
  'test/integration/redis-master-switch.test.ts',
  'test/integration/redis-partition.test.ts',
  'test/integration/redis-sentinel.test.ts',
  'test/integration/startup.test.ts',
  'test/integration/storage-s3-abort.test.ts',
  'test/integration/tarefas-processes.test.ts',
  'test/integration/tarefas-redis-outage.test.ts',
  'test/integration/worker-health.test.ts',
];

// Two at a time, a long file that starts last runs on alone at the end: these (the longest,
// longest first) start before the rest. Without it vitest orders a clean clone's files by size.
const LONG_FIRST = [
  'test/cli/install.test.ts',
  'test/http/clients.test.ts',
  'test/cli/lote-servidor-envios.test.ts',
  'test/cli/lote-servidor.test.ts',
  'test/browser/page.test.ts',
  'test/cli/lote.test.ts',
  'test/integration/tarefas-cli.test.ts',
  'test/browser/page-access.test.ts',
];

class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const at = LONG_FIRST.indexOf(path.relative(spec.project.config.root, spec.moduleId));
      return at < 0 ? LONG_FIRST.length : at;
    };
    // Stable: the groups keep their order, and the rest of a group the order vitest gave it.
    return sorted.sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    setupFiles: ['test/setup.ts'],
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'two-at-a-time',
          include: ['test/**/*.test.ts'],
          exclude: [...ONE_AT_A_TIME, ...ALONE],
          maxWorkers: Math.max(2, os.availableParallelism()),
          // Each test process runs file after file without loading the modules again: on a
          // 2-core machine this group is CPU-bound, and a fresh process per file spent a tenth of
          // its CPU on imports. Helpers clean up per file through test/helpers/file-end.ts.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'one-at-a-time', include: ONE_AT_A_TIME, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});
