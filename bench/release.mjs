// Section 0: the current tree against the last release, both measured in this run. The release is
// extracted and built beside the current tree (before.mjs `treeAt`), then every case runs on both
// builds in turn, case by case (release then current in odd rounds, current then release in even
// ones), so that each ratio compares two figures of the same minute on the same loaded machine.
// A figure is never compared with one recorded on another day: a slower build hid exactly there
// (issue 58).
//
// Which release (the first that answers):
//   1. `--release <ref>` on the command line (any commit, tag or branch);
//   2. the newest `v*` tag reachable from HEAD (`git describe --tags --abbrev=0 --match 'v[0-9]*'`);
//   3. RELEASE_REV, recorded in bench/before.mjs (the repo has no tag yet).
//
// `node bench/release.mjs [runs] [--release <ref>]`: the comparison alone (after `npm run build`),
// its table printed; `npm run bench -- --only release [--quick]` also writes it into BENCHMARKS.md.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openAsBlob, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RELEASE_REV, treeAt } from './before.mjs';
import { deploy } from './http.mjs';
import { ROOT, median, memoryOf, runNodeJson } from './lib.mjs';
import { post } from './span.mjs';

const ONE = path.join(ROOT, 'bench', 'one.mjs');
const PEAK = pathToFileURL(path.join(ROOT, 'bench', 'peak-rss.mjs')).href;

/** A row more than this much slower than the release's (current / release time) is reported in red. */
export const SLOWER = 1.05;
/** A process's peak RSS more than this over the release's is reported with the slower rows (issue 58's goal). */
export const HEAVIER = 1.1;

const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();

/** The release to compare with and why that one (see the head of this file). */
export function releaseRef(argv = process.argv) {
  const at = argv.indexOf('--release');
  let ref;
  let how;
  if (at >= 0) {
    ref = argv[at + 1];
    if (!ref || ref.startsWith('--')) throw new Error('bench: --release takes a ref (a tag, a branch or a commit)');
    how = `named with \`--release ${ref}\``;
  } else {
    try {
      ref = git('describe', '--tags', '--abbrev=0', '--match', 'v[0-9]*', 'HEAD');
      how = 'the newest `v*` tag reachable from HEAD';
    } catch {
      // No tag: the ref recorded in the repo.
    }
    if (!ref) {
      ref = RELEASE_REV;
      how = 'recorded as `RELEASE_REV` in `bench/before.mjs` (no `v*` tag is reachable from HEAD)';
    }
  }
  let commit;
  try {
    commit = git('rev-parse', '--short', `${ref}^{commit}`);
  } catch {
    throw new Error(`bench: the release ${ref} is not a commit of this repository`);
  }
  return { ref, commit, how };
}

/** What the current build is: HEAD, and whether the working tree differs from it (it is what was built). */
export function currentRef() {
  const head = git('rev-parse', '--short', 'HEAD');
  const dirty = git('status', '--porcelain', '--untracked-files=no', '--', 'shared', 'services', 'cli') !== '';
  return { head, label: dirty ? `${head} + working tree` : head };
}

/** Both builds: the current one (the workspace's dist/) and the release's (extracted under .bench/). */
export function builds(release) {
  // By its commit: a ref such as `origin/main` or `HEAD~3` would name a folder badly.
  const tree = treeAt(release.commit);
  return {
    release: {
      name: 'release',
      coreEnv: { BENCH_SHARED: path.join(tree.dir, 'shared', 'dist', 'local.js') },
      apiMain: tree.apiMain,
      cliMain: tree.cliMain,
    },
    current: {
      name: 'current',
      coreEnv: {},
      apiMain: path.join(ROOT, 'services', 'api', 'dist', 'main.js'),
      cliMain: path.join(ROOT, 'cli', 'dist', 'main.js'),
    },
  };
}

/**
 * The cases, by the section of the report they belong to. `core`: bench/one.mjs in a fresh process
 * (the core alone, its peak RSS the process's); `http`: a request to an embedded deployment of each
 * build, both running; `cli`: a whole `censo` process, its peak RSS read at its exit.
 * `anchor` names the same-round figure the case is also divided by (issue 58's goals).
 */
export function releaseCases(data) {
  const { p100k, x25, j25, t25 } = data;
  return [
    {
      id: 'core-json25',
      group: 'core',
      label: `json return, ${fmt0(j25.rows)} rows: read + rules`,
      one: ['core', j25.files.json],
      expect: j25.divergencias,
      anchor: 'parse',
    },
    {
      id: 'core-xlsx100',
      group: 'core',
      label: `xlsx return, ${fmt0(p100k.rows)} rows: read + rules`,
      one: ['core', p100k.files.xlsx],
      expect: p100k.divergencias,
      anchor: 'exceljs',
    },
    {
      id: 'core-xlsx25',
      group: 'core',
      label: `xlsx return, ${fmt0(x25.rows)} rows: read + rules`,
      one: ['core', x25.files.xlsx],
      expect: x25.divergencias,
    },
    {
      id: 'job-div100-json',
      group: 'core',
      label: `runJob divergencias, p100k, json`,
      one: ['job-div-json', p100k.files.xlsx],
      expect: p100k.divergencias,
    },
    {
      id: 'job-div100-xlsx',
      group: 'core',
      label: `runJob divergencias, p100k, xlsx`,
      one: ['job-div-xlsx', p100k.files.xlsx],
      expect: p100k.divergencias,
    },
    {
      id: 'job-rf-t25',
      group: 'core',
      label: 'runJob retorno-rf, t25 (xlsx + txt)',
      one: ['job-rf', t25.files.xlsx, t25.files.txt],
      expect: t25.pessoas,
    },
    {
      id: 'job-corrigido-t25',
      group: 'core',
      label: 'runJob censo-corrigido, t25',
      one: ['job-corrigido', t25.files.xlsx, t25.files.txt],
      expect: t25.pessoas,
    },
    {
      id: 'http-json25',
      group: 'http',
      label: `\`POST /api/divergencias-rf\`, j25 json (${mib(j25.sizes.json)} MiB), encode → answer parsed`,
      http: { fields: [['retorno', j25.files.json]], path: 'divergencias-rf', expect: j25.divergencias, parse: true },
      anchor: 'parse',
    },
    {
      id: 'http-xlsx100',
      group: 'http',
      label: `\`POST /api/divergencias-rf\`, p100k xlsx (${fmt0(p100k.rows)} rows), first byte → last`,
      http: { fields: [['retorno', p100k.files.xlsx]], path: 'divergencias-rf', expect: p100k.divergencias },
      anchor: 'exceljs',
    },
    {
      id: 'http-rf100',
      group: 'http',
      label: '`POST /api/retorno-rf`, p100k xlsx + txt, first byte → last',
      http: {
        fields: [
          ['retorno', p100k.files.xlsx],
          ['txt', p100k.files.txt],
        ],
        path: 'retorno-rf',
        expect: p100k.pessoas,
      },
    },
    {
      id: 'cli-json25',
      group: 'cli',
      label: `\`censo divergencias\`, j25 json (${fmt0(j25.persons)} persons)`,
      cli: ['divergencias', j25.files.json, '-o', '/dev/null'],
    },
    {
      id: 'cli-xlsx100',
      group: 'cli',
      label: `\`censo divergencias\`, p100k xlsx (${fmt0(p100k.persons)} persons)`,
      cli: ['divergencias', p100k.files.xlsx, '-o', '/dev/null'],
    },
    {
      id: 'cli-xlsx25',
      group: 'cli',
      label: `\`censo divergencias\`, x25 xlsx (${fmt0(x25.persons)} persons)`,
      cli: ['divergencias', x25.files.xlsx, '-o', '/dev/null'],
    },
  ];
}

const fmt0 = (x) => x.toLocaleString('en-US');
const mib = (bytes) => (bytes / 1024 / 1024).toFixed(1);

/** A FormData of files, each a file-backed Blob: the body is encoded while it is sent, as span.mjs's client does. */
async function formOf(fields) {
  const body = new FormData();
  for (const [field, file] of fields) body.append(field, await openAsBlob(file), path.basename(file));
  return () => {
    const response = new Response(body);
    return { stream: Readable.fromWeb(response.body), type: response.headers.get('content-type') };
  };
}

/**
 * One request over a fresh connection, checked: its time from the first byte to the last or, with
 * `parse`, to the answer parsed by the client (section 3c's span, the one the JSON.parse anchor is for).
 */
async function request(url, { fields, path: route, expect, parse }) {
  const t0 = performance.now();
  const { times, answer } = await post(`${url}/api/${route}`, await formOf(fields));
  const value = JSON.parse(answer.toString('utf8'));
  const total = performance.now() - t0;
  const count = (value.divergencias ?? value.pessoas)?.length;
  if (count !== expect) throw new Error(`${route}: ${count} items in the answer, expected ${expect}`);
  return { ms: parse ? total : times.last };
}

/** A whole `node <entry> <args>` process: its wall time and its peak RSS (bench/peak-rss.mjs). */
function cliRun(entry, args, timeoutMs = 300_000) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'censo-bench-peak-'));
  const peakFile = path.join(dir, 'peak');
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--import', PEAK, entry, ...args], {
      cwd: ROOT,
      env: { ...process.env, BENCH_PEAK_FILE: peakFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ms = performance.now() - t0;
      try {
        if (code !== 0) throw new Error(`${entry} ${args.join(' ')} exited ${code ?? signal}: ${err.trim().slice(-2000)}`);
        resolve({ ms, rssMB: Number(readFileSync(peakFile, 'utf8')) / 1024 });
      } catch (error) {
        reject(error);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/** bench/one.mjs in a fresh process, its count checked (exceljs counts the title and header rows too). */
async function oneRun(args, env, expect, atLeast = false) {
  const r = await runNodeJson(['--expose-gc', ONE, ...args], { env });
  if (expect !== undefined && (atLeast ? r.out < expect : r.out !== expect))
    throw new Error(`one.mjs ${args[0]}: ${r.out} results, expected ${expect}`);
  return { ms: r.ms, rssMB: r.maxRssMB };
}

/**
 * Runs every case `runs` rounds on both builds and returns, per case, the medians of each build,
 * the median of the same-round ratios current / release, and its anchor ratios.
 */
export async function runRelease(data, runs, log = console.log, release = releaseRef()) {
  log(`  release ${release.ref} (${release.commit}): building it under .bench/ if not built yet`);
  const both = builds(release);
  const cases = releaseCases(data);
  const samples = Object.fromEntries(cases.map((c) => [c.id, { release: [], current: [] }]));
  const anchors = { parse: [], exceljs: [] };
  const deployments = {};
  try {
    for (const build of Object.values(both))
      deployments[build.name] = await deploy(`release-${build.name}`, 0, null, {}, { apiMain: build.apiMain });
    // Warm-up, not recorded: threads, JIT, the page cache (each request once on each build).
    for (const c of cases.filter((x) => x.http)) for (const name of ['release', 'current']) await request(deployments[name].url, c.http);
    for (let round = 1; round <= runs; round++) {
      const order = round % 2 === 1 ? ['release', 'current'] : ['current', 'release'];
      // The anchors, once a round: a bare JSON.parse of j25 (median of three, in this process, as
      // section 3c) and exceljs iterating p100k's rows (a fresh process, as section 3e).
      const parses = [];
      for (let k = 0; k < 3; k++) {
        const t = performance.now();
        JSON.parse(readFileSync(data.j25.files.json, 'utf8'));
        parses.push(performance.now() - t);
      }
      anchors.parse.push(median(parses));
      anchors.exceljs.push((await oneRun(['exceljs', data.p100k.files.xlsx], {}, data.p100k.rows, true)).ms);
      for (const c of cases) {
        for (const name of order) {
          const build = both[name];
          let r;
          if (c.one) r = await oneRun(c.one, build.coreEnv, c.expect);
          else if (c.http) r = await request(deployments[name].url, c.http);
          else r = await cliRun(build.cliMain, c.cli);
          samples[c.id][name].push(r);
        }
      }
      log(`  release comparison round ${round}/${runs} done`);
    }
  } finally {
    for (const d of Object.values(deployments)) d.apiPeak = memoryOf(d.api.pid).hwm;
    await Promise.all(Object.values(deployments).map((d) => d.stop()));
  }
  const rows = cases.map((c) => {
    const s = samples[c.id];
    const of = (name) => ({ ms: median(s[name].map((r) => r.ms)), rssMB: median(s[name].map((r) => r.rssMB ?? NaN)) });
    const ratios = s.current.map((r, i) => r.ms / s.release[i].ms);
    const pairs = (key) => median(s.current.map((r, i) => r[key] / s.release[i][key]));
    const anchored = (name) => (c.anchor ? median(s[name].map((r, i) => r.ms / anchors[c.anchor][i])) : null);
    return {
      id: c.id,
      group: c.group,
      label: c.label,
      anchor: c.anchor ?? null,
      release: { ...of('release'), anchor: anchored('release') },
      current: { ...of('current'), anchor: anchored('current') },
      ratio: median(ratios),
      ratioMin: Math.min(...ratios),
      ratioMax: Math.max(...ratios),
      rssRatio: c.http ? NaN : pairs('rssMB'),
    };
  });
  return {
    release,
    current: currentRef(),
    runs,
    rows,
    anchors: { parse: median(anchors.parse), exceljs: median(anchors.exceljs) },
    apiPeak: { release: deployments.release?.apiPeak ?? NaN, current: deployments.current?.apiPeak ?? NaN },
  };
}

/** The rows over the thresholds, by section: what the top of the report and the terminal say. */
export function verdict(result) {
  const slower = result.rows.filter((r) => r.ratio > SLOWER);
  // The embedded API's peak is one figure for all the HTTP rows: it is judged as a row of its own.
  const api = {
    group: 'http',
    label: 'the embedded API process, peak over the HTTP rows',
    release: { rssMB: result.apiPeak.release },
    current: { rssMB: result.apiPeak.current },
    rssRatio: result.apiPeak.current / result.apiPeak.release,
  };
  const heavier = [...result.rows, api].filter((r) => r.rssRatio > HEAVIER);
  return { slower, heavier, ok: slower.length === 0 && heavier.length === 0 };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { ensureData } = await import('./data.mjs');
  const data = await ensureData(console.log);
  const runs = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 3);
  const result = await runRelease(data, runs);
  for (const r of result.rows)
    console.log(
      `${r.id.padEnd(18)} release ${r.release.ms.toFixed(0).padStart(6)} ms  current ${r.current.ms.toFixed(0).padStart(6)} ms  ${r.ratio.toFixed(2)}×`,
    );
}
