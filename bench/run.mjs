#!/usr/bin/env node
// `npm run bench [-- --quick] [--release <ref>] [--only <sections>]`: generates the data it needs
// in .bench/, runs every section, prints the tables and writes BENCHMARKS.md. Section 0 builds the
// last release beside the tree and runs the core, HTTP and CLI cases on both, alternating
// (bench/release.mjs says which release); what is slower than it opens the report, and ends the
// terminal output in red. `--only release` runs that comparison alone (a few minutes with --quick). Needs nothing outside the repo except the local
// Redis and PostgreSQL (REDIS_URL / DATABASE_URL, defaulting to 127.0.0.1); a section whose
// server is not there is skipped and says so. BENCH_REDIS_URL / BENCH_DATABASE_URL override those;
// BENCH_LOG_LEVEL sets the deployments' LOG_LEVEL (default warn; their logs go to .bench/logs/).
// Each section is a module of bench/sections/, run here in the report's order.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DATA } from './lib.mjs';
import { burstSection } from './sections/burst.mjs';
import { cliSection } from './sections/cli.mjs';
import { coreSections } from './sections/core.mjs';
import { dataSection } from './sections/data.mjs';
import { httpSection } from './sections/http.mjs';
import { machineSection } from './sections/machine.mjs';
import { pageSection } from './sections/page.mjs';
import { profileSection } from './sections/profile.mjs';
import { querySection } from './sections/query.mjs';
import { releaseRef } from './release.mjs';
import { releaseSection, releaseVerdictLine } from './sections/release.mjs';
import { createReport, spliceReport, writeReport } from './sections/report.mjs';
import { spanNode24Section } from './sections/span-node24.mjs';
import { spanSection } from './sections/span.mjs';
import { xlsxSpanSection } from './sections/span-xlsx.mjs';
import { tracingSection } from './sections/tracing.mjs';
import { idleSection } from './sections/idle.mjs';
import { storageSection } from './sections/storage.mjs';
import { workerMemorySection } from './sections/worker-memory.mjs';

const quick = process.argv.includes('--quick');
const RUNS = quick ? 2 : 5;
const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const started = Date.now();
mkdirSync(path.join(DATA, 'logs'), { recursive: true });

const report = createReport();
const { machine, redisVersion, pgVersion } = await machineSection({ ...report, quick, RUNS, redisUrl, databaseUrl });
// `--only 6,9`: those sections alone, spliced into the BENCHMARKS.md of the last full run. Only
// `release` of them reads the data sets (generated, or checked, first).
const onlyArg = process.argv.indexOf('--only');
const only = String(onlyArg >= 0 ? (process.argv[onlyArg + 1] ?? '') : '')
  .split(',')
  .filter(Boolean);
const withRelease = onlyArg < 0 || only.includes('release') || only.includes('0');
// A --release that names no commit stops the run before anything is measured.
if (withRelease) {
  try {
    releaseRef();
  } catch (err) {
    console.error(err.message);
    process.exit(2);
  }
}
const { data, dataTable } = withRelease ? await dataSection(report) : { data: null, dataTable: '' };
/** What every section may read: the report, the options, the servers found and the data sets. */
const run = { ...report, quick, RUNS, redisUrl, databaseUrl, redisVersion, pgVersion, data };

if (onlyArg >= 0) {
  const alone = {
    0: releaseSection,
    release: releaseSection,
    6: burstSection,
    8: tracingSection,
    9: idleSection,
    '3b': storageSection,
    '2c': workerMemorySection,
    4: querySection,
    7: pageSection,
  };
  const unknown = only.filter((name) => !(name in alone));
  if (only.length === 0 || unknown.length > 0) {
    console.error(`bench: --only takes sections of ${Object.keys(alone).join(', ')} (got ${unknown.join(', ') || 'none'})`);
    process.exit(2);
  }
  for (const name of only) await alone[name](run);
  spliceReport(run, { only, machine });
} else {
  await releaseSection(run); // 0
  const core = await coreSections(run); // 1, 2, 2b
  await cliSection(run, core); // 5
  await httpSection(run, core); // 3
  await storageSection(run); // 3b
  await workerMemorySection(run); // 2c
  await burstSection(run); // 6
  await spanSection(run); // 3c
  await spanNode24Section(run); // 3d
  await xlsxSpanSection(run); // 3e
  await pageSection(run); // 7
  await querySection(run); // 4
  await tracingSection(run); // 8
  await idleSection(run); // 9
  await profileSection(run);
  writeReport(run, { started, machine, dataTable });
}
const verdict = releaseVerdictLine(run);
if (verdict) console.log(`\n${verdict}`);
