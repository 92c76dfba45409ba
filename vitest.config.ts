import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';
import { onThisMachine, slowdown } from './test/helpers/deadline.js';

// Tests import the workspace packages by name (@censo/shared, @censo/api, @censo/worker), which
// resolve to their compiled dist/: the suite exercises exactly the JavaScript that ships, and
// worker threads / sandboxed processors load real .js files. `npm test` builds first.
//
// Two commands, five groups, together the whole suite (a file named in none of the lists below
// lands in `parallel`, so nothing is ever left out):
//
// - `npm test` (projects `parallel` and `one-at-a-time`): what a newcomer runs, in minutes on
//   2 cores: the unit files, the service over HTTP in-process, the `censo` command as a user runs
//   it, and the integration files that fit.
// - `npm run test:completo` (projects `completo-parallel`, `completo-one-at-a-time` and `alone`):
//   the rest, which needs programs a laptop may lack or spends minutes on one thing: Chromium,
//   LibreOffice, the deployment recipes' own tools, the installs from a packed .tgz, Redis
//   topologies failing over, the fault suite in network namespaces and the scale profile.
//
// Most files run three at a time even on 2 cores (vitest's default there is one): they spend
// much of their time waiting on sockets, processes, npm and the browser (two at a time, the
// group's CPU time was about 60% of what two cores give over its duration; three at a time cut it
// from about 8 to 6 minutes, measured on a busy machine), and time nothing against a bound. The
// files that time Redis failovers, a worker's SIGTERM drain, a 500 ms limiter deadline, a
// recovery against a bound or V8's collections run one at a time (two at a time made a drain and
// a Sentinel failover miss their bounds). The fault suite in network namespaces times recovery
// against its own healthy baseline, and the scale profile measures CPU per host under quotas:
// they run last, alone.
const ALONE = ['test/integration/escala.test.ts', 'test/integration/cluster.test.ts'];
// The group jobs' and the handshake's files wait on queue events under the queue's 3 s command
// deadline; beside two other files a request of theirs once missed it (a 503 in a clean clone).
// The ledger's kill file freezes an API's Redis for a few hundred milliseconds at a time, under
// the same deadline, while three API and worker processes record a few hundred ends.
const ONE_AT_A_TIME = [
  'test/integration/autoscale.test.ts',
  'test/integration/contrato-handshake.test.ts',
  'test/integration/heap-tuning.test.ts',
  'test/integration/queue.test.ts',
  'test/integration/rate-limit-redis.test.ts',
  'test/integration/safra-kill.test.ts',
  'test/integration/tarefas-grupos.test.ts',
  'test/integration/tarefas-partilha.test.ts',
  'test/integration/tarefas-processes.test.ts',
  'test/integration/worker-health.test.ts',
];
// Redis topologies (Sentinel, Cluster, partitions, a master switch) and the recipe's Redis: each
// starts its own redis-servers and waits on their clocks, a minute or two of a quiet machine.
const COMPLETO_ONE_AT_A_TIME = [
  'test/deploy/redis-recipe.test.ts',
  'test/deploy/queue-metrics.test.ts',
  'test/integration/faults.test.ts',
  'test/integration/redis-cluster.test.ts',
  'test/integration/redis-failover-metric.test.ts',
  'test/integration/redis-master-switch.test.ts',
  'test/integration/redis-partition.test.ts',
  'test/integration/redis-sentinel.test.ts',
];
// Chromium (the staff page), LibreOffice (the workbooks as the staff opens them), the deployment
// recipes' own tools (kubectl, promtool, logrotate) and the installs from the packed .tgz.
const COMPLETO_PARALLEL = [
  'test/browser/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/http/formats.test.ts',
  'test/http/spreadsheet-safety.test.ts',
  'test/unit/tarefas-output.test.ts',
  'test/cli/install.test.ts',
  'test/integration/lean-install.test.ts',
];

// A long file that starts last runs on alone at the end: these (the longest, longest first, as
// measured with TEST_CPU_LOG: docs/desenvolvimento.md) start before the rest. Without it vitest
// orders a clean clone's files by size.
const LONG_FIRST = [
  'test/cli/install.test.ts',
  'test/http/clients.test.ts',
  'test/cli/lote-servidor-envios.test.ts',
  'test/integration/lean-install.test.ts',
  'test/browser/page.test.ts',
  'test/integration/redis-chamadas.test.ts',
  'test/deploy/monitoring.test.ts',
  'test/cli/lote.test.ts',
  'test/cli/lote-servidor.test.ts',
  'test/integration/tarefas-cli.test.ts',
  'test/browser/page-access.test.ts',
  'test/browser/page-safety.test.ts',
  'test/browser/page-escolas.test.ts',
];

const parallelGroup = {
  // One more than the cores, and at least three: a file waiting on npm, Chromium or a service
  // leaves its core to the others.
  maxWorkers: Math.max(3, os.availableParallelism() + 1),
  // Each test process runs file after file without loading the modules again: a fresh process
  // per file spent a tenth of this group's CPU on imports. Helpers clean up per file through
  // test/helpers/file-end.ts.
  isolate: false,
};

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

// Node 24's V8 write-protects its JIT and WebAssembly code pages with the CPU's memory protection
// keys (PKU, on most Xeon and EPYC) and keeps a registry of them that PGlite's WebAssembly churn
// (databases created and closed file after file in one test process) can put out of step: a
// completo test process aborted in CI with `Check failed: jit_page_->allocations_.erase(addr) == 1`
// (nodejs/node#64500, open). The test processes run without that protection where this Node's V8
// has the flag; Node 20's does not know it, and refuses it.
const v8Flags = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' }).stdout ?? '';
const testExecArgv = /^\s*--memory-protection-keys\b/m.test(v8Flags) ? ['--no-memory-protection-keys'] : [];

// Deadlines scale with the machine's speed at the start (test/helpers/deadline.ts): a test or a
// hook gets its quiet-machine budget times the slowdown, and the test processes inherit the factor.
const slowdownFactor = slowdown();
process.env.TEST_SLOWDOWN = String(slowdownFactor);

export default defineConfig({
  test: {
    testTimeout: onThisMachine(30_000),
    hookTimeout: onThisMachine(60_000),
    // expect.poll waits on a page or a service that answers after a round trip (an upload, a
    // task, Chromium re-rendering): vitest's own 1 s default failed a browser test in CI whose
    // answer came later under the completo group's load. A poll that succeeds ends at once, so a
    // longer bound costs only a failing test's time.
    expect: { poll: { timeout: onThisMachine(10_000) } },
    pool: 'forks',
    execArgv: testExecArgv,
    setupFiles: ['test/setup.ts'],
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: [...COMPLETO_PARALLEL, ...COMPLETO_ONE_AT_A_TIME, ...ONE_AT_A_TIME, ...ALONE],
          ...parallelGroup,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'one-at-a-time', include: ONE_AT_A_TIME, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      {
        extends: true,
        test: {
          name: 'completo-parallel',
          include: COMPLETO_PARALLEL,
          exclude: COMPLETO_ONE_AT_A_TIME,
          ...parallelGroup,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: { name: 'completo-one-at-a-time', include: COMPLETO_ONE_AT_A_TIME, maxWorkers: 1, sequence: { groupOrder: 3 } },
      },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 4 } } },
    ],
  },
});
