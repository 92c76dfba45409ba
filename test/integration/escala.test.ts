// The scale profile's short run (cluster/escala.mjs, CLUSTER.md "Scale profile"): one and two
// worker hosts at 0.1 core each (network namespaces with a cgroup CPU quota), a Sentinel trio, one
// API, a small batch sent by `censo lote --servidor`. What can fail: a run that does not finish,
// a file of the batch left unanswered, a combined CSV that is not byte for byte the local
// `censo lote`'s, a rate or a role's CPU not measured, the report not written between its markers
// (and the rest of the file touched), and namespaces or cgroups left behind. It measures, so it
// runs alone or one file at a time, never beside other files.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROOT, runClusterScript } from '../helpers/cluster-script.js';
import { onThisMachine } from '../helpers/deadline.js';

const ESCALA_SCRIPT = 'cluster/escala.mjs';
const ESCALA = path.join(ROOT, ESCALA_SCRIPT);
const LIMIT_MS = onThisMachine(150_000);
let out: string | undefined;

interface Run {
  label: string;
  files: number;
  exit: number | string;
  filesPerSec: number;
  everyFileAnswered: boolean;
  answered: { total: number; concluida: number; falhou: number; estado: string } | null;
  sameOutput: boolean;
  cpuMsPerFile: Record<string, number>;
  hosts: Record<string, { cpuMs: number; periods: number; throttled: number; quota: number | null }>;
  redis: { callsPerFile: number; top: { command: string; perFile: number }[] };
}
interface Size {
  hosts: number;
  cores: number;
  files: number;
  runs: Run[];
}
interface Results {
  ok: boolean;
  series: { workers?: Size[] };
}

afterAll(async () => {
  spawnSync(process.execPath, [ESCALA, '--cleanup'], { cwd: ROOT, timeout: onThisMachine(60_000), stdio: 'ignore' });
  if (out) await rm(out, { recursive: true, force: true });
});

const ours = (names: string[]) => names.filter((name) => name.startsWith('cnse-'));
/** This profile's network namespaces still on the machine. */
const ourNamespaces = () =>
  ours(
    spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .stdout.split('\n')
      .map((line) => line.split(' ')[0]!),
  );

it(
  'short profile: both sizes finish, every file answered, output identical to the local censo lote, CPU per role measured, nothing left',
  async () => {
    out = await mkdtemp(path.join(os.tmpdir(), 'censo-escala-test-'));
    const report = path.join(out, 'CLUSTER.md');
    // A report that already has the fault suite's part and an older scale section: only the latter changes.
    await writeFile(report, '# Cluster fault suite\n\nbefore\n\n<!-- escala:inicio -->\nold section\n<!-- escala:fim -->\n\nafter\n');
    // The run tears itself down on SIGTERM; past that, SIGKILL (afterAll still cleans up).
    const { code, output } = await runClusterScript(
      ESCALA_SCRIPT,
      ['--profile', 'short', '--out', path.join(out, 'run'), '--report', report],
      {
        limitMs: LIMIT_MS,
        termBeforeMs: 25_000,
        killAfterMs: 15_000,
      },
    );
    const tail = output.slice(-4000);

    const results = JSON.parse(await readFile(path.join(out, 'run', 'results.json'), 'utf8').catch(() => '{}')) as Partial<Results>;
    const sizes = results.series?.workers ?? [];
    expect(
      sizes.map((s) => [s.hosts, s.cores]),
      tail,
    ).toEqual([
      [1, 0.1],
      [2, 0.1],
    ]);
    for (const size of sizes) {
      expect(size.runs, tail).toHaveLength(1);
      const run = size.runs[0]!;
      expect(run.exit, `${run.label}\n${tail}`).toBe(0);
      expect(run.answered, run.label).toEqual({ total: size.files, concluida: size.files, falhou: 0, estado: 'concluido' });
      expect(run.everyFileAnswered, run.label).toBe(true);
      expect(run.sameOutput, `${run.label}: the CLI's combined CSV differs from the local censo lote's`).toBe(true);
      expect(run.filesPerSec, run.label).toBeGreaterThan(0);
      for (const role of ['workers', 'api', 'cli', 'redis']) {
        expect(Number.isFinite(run.cpuMsPerFile[role]) && run.cpuMsPerFile[role]! > 0, `${run.label}: CPU of ${role}`).toBe(true);
      }
      // Each worker host ran under its quota, and its cpu.stat was read.
      for (let i = 1; i <= size.hosts; i++) {
        const host = run.hosts[`wk${i}`]!;
        expect(host.quota, `${run.label} wk${i}`).toBe(0.1);
        expect(host.periods, `${run.label} wk${i}`).toBeGreaterThan(0);
      }
      expect(run.redis.callsPerFile, run.label).toBeGreaterThan(0);
      expect(run.redis.top.length, run.label).toBeGreaterThan(0);
    }
    expect(results.ok, tail).toBe(true);
    expect(code, tail).toBe(0);

    // The section replaced between its markers, the rest of the file as it was; the chart beside it.
    const written = await readFile(report, 'utf8');
    expect(written.startsWith('# Cluster fault suite\n\nbefore\n\n<!-- escala:inicio -->\n## Scale profile')).toBe(true);
    expect(written.endsWith('<!-- escala:fim -->\n\nafter\n')).toBe(true);
    expect(written).not.toContain('old section');
    expect(written).toContain('| 2 × 0.1 core | ');
    expect(written).toContain('](escala.svg)');
    const svg = await readFile(path.join(out, 'escala.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);

    // Nothing of the run is left: namespaces, links, cgroups.
    expect(ourNamespaces()).toEqual([]);
    const links = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout;
    expect(ours(links.split('\n').map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? ''))).toEqual([]);
    for (const hierarchy of ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpuacct']) {
      expect(existsSync(hierarchy), hierarchy).toBe(true);
      expect(ours(readdirSync(hierarchy)), hierarchy).toEqual([]);
    }
  },
  LIMIT_MS,
);

it('the options of a longer measurement (--api-files, --api-cores, --api-warmup, --api-counts, --api-concurrency, --minutes, --shards): refused in words, exit 2 and nothing started, without the api series or out of range', () => {
  const cases: [string[], string][] = [
    [['--profile', 'short', '--api-files', '1920'], 'escala: --api-files must be 50 to 20000, with the api series'],
    [['--profile', 'long', '--series', 'api', '--api-files', '10'], 'escala: --api-files must be 50 to 20000, with the api series'],
    [['--profile', 'long', '--series', 'api', '--api-cores', '2'], 'escala: --api-cores must be 0.01 to 1, with the api series'],
    [['--profile', 'short', '--api-warmup', '500'], 'escala: --api-warmup must be 0 to 20000 files per API, with the api series'],
    [
      ['--profile', 'long', '--series', 'api', '--api-warmup', '20001'],
      'escala: --api-warmup must be 0 to 20000 files per API, with the api series',
    ],
    [['--profile', 'short', '--api-counts', '1'], 'escala: --api-counts must be a list of 1 to 3, with the api series'],
    [['--profile', 'long', '--series', 'api', '--api-counts', '1,4'], 'escala: --api-counts must be a list of 1 to 3, with the api series'],
    [['--profile', 'long', '--series', 'api', '--api-concurrency', '0'], 'escala: --api-concurrency must be 1 to 16, with the api series'],
    [['--profile', 'short', '--minutes', '0'], 'escala: --minutes must be 1 to 120'],
    [['--profile', 'short', '--shards', '9'], 'escala: --shards must be 1 to 8'],
    [['--profile', 'short', '--shards', '1.5'], 'escala: --shards must be 1 to 8'],
  ];
  for (const [args, message] of cases) {
    const run = spawnSync(process.execPath, [ESCALA, ...args], { cwd: ROOT, encoding: 'utf8', timeout: onThisMachine(30_000) });
    expect({ status: run.status, stderr: run.stderr.trim() }, args.join(' ')).toEqual({ status: 2, stderr: message });
  }
  expect(ourNamespaces()).toEqual([]);
});

// cluster/api-replicas.mjs: the API series on loopback, with no host of its own (CLUSTER.md, "The
// API's cost a file on loopback"). What can fail: a batch not answered as the local run answers
// it, a count not measured, a quota not applied, and processes, cgroups or folders left behind.
const REPLICAS = path.join(ROOT, 'cluster/api-replicas.mjs');
const replicaGroups = () =>
  ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpuacct'].flatMap((hierarchy) =>
    readdirSync(hierarchy).filter((name) => name.startsWith('censo-apirep-')),
  );
const replicaFolders = () => readdirSync(os.tmpdir()).filter((name) => name.startsWith('censo-api-replicas-'));

it('api-replicas: its options refused in words, exit 2 and nothing started', () => {
  const cases: [string[], string][] = [
    [['--files', '5'], 'api-replicas: --files must be 10 to 20000'],
    [['--runs', '0'], 'api-replicas: --runs must be 1 to 10'],
    [['--workers', '1.5'], 'api-replicas: --workers must be 1 to 16'],
    [['--counts', '1,9'], 'api-replicas: --counts must be a list of 1 to 8'],
    [['--clients', '9'], 'api-replicas: --clients must be 1 to 8, and divide --files'],
    [['--files', '601', '--clients', '2'], 'api-replicas: --clients must be 1 to 8, and divide --files'],
    [['--api-cores', '2'], 'api-replicas: --api-cores must be 0.01 to 1'],
    [['--api-cores', 'x'], 'api-replicas: --api-cores must be 0.01 to 1'],
    [['--bogus'], 'api-replicas: the options are --files, --runs, --counts, --workers, --clients and --api-cores, each with a value'],
    [['--files'], 'api-replicas: the options are --files, --runs, --counts, --workers, --clients and --api-cores, each with a value'],
  ];
  for (const [args, message] of cases) {
    const run = spawnSync(process.execPath, [REPLICAS, ...args], { cwd: ROOT, encoding: 'utf8', timeout: onThisMachine(30_000) });
    expect({ status: run.status, stderr: run.stderr.trim(), stdout: run.stdout }, args.join(' ')).toEqual({
      status: 2,
      stderr: message,
      stdout: '',
    });
  }
  expect(replicaFolders()).toEqual([]);
});

it(
  "api-replicas: one and two APIs under a quota each answer two clients' batches as the local run does, each count measured, nothing left",
  () => {
    const run = spawnSync(
      process.execPath,
      [REPLICAS, '--files', '30', '--runs', '1', '--counts', '1,2', '--workers', '2', '--clients', '2', '--api-cores', '0.5'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: onThisMachine(120_000),
      },
    );
    const said = `${run.stdout}\n${run.stderr.slice(-3000)}`;
    expect(run.status, said).toBe(0);
    const rows = run.stdout
      .split('\n')
      .filter((line) => /^\| \d+ \|/.test(line))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    expect(
      rows.map((cells) => [cells[1], cells[6]]),
      said,
    ).toEqual([
      ['1', "the local run's"],
      ['2', "the local run's"],
    ]);
    for (const cells of rows) {
      expect(Number(cells[2]), said).toBeGreaterThan(0); // files a second
      expect(Number(cells[4]), said).toBeGreaterThan(0); // API CPU a file
    }
    // Each API ran under its quota: its throttling was read, once per API of the count.
    expect(run.stderr.match(/^run 1, 2 API\(s\): .*, throttled \d+ % \/ \d+ %$/m), said).not.toBeNull();
    expect(replicaGroups()).toEqual([]);
    expect(replicaFolders()).toEqual([]);
    const left = spawnSync('pgrep', ['-f', 'censo-api-replicas-'], { encoding: 'utf8' }).stdout.trim();
    expect(left, 'processes of the run still up').toBe('');
  },
  onThisMachine(150_000),
);
