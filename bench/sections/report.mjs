// What every section of `npm run bench` writes to: the console, the markdown sections of
// BENCHMARKS.md and the targets table; and, at the end, the file itself.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, table } from '../lib.mjs';

export const MiB = 1024 * 1024;

/**
 * The run's report. `section(title, body)` prints a section and keeps it for the file;
 * `target(name, value, ok)` adds a row to the targets (`ok` null: not measured);
 * `measure(enabled, name, run)` is a section's measurements, or null when it cannot run here
 * (`enabled` false) or failed (logged).
 */
export function createReport() {
  const log = (...a) => console.log(...a);
  const md = [];
  const targets = [];
  const section = (title, body) => {
    md.push(`## ${title}\n\n${body}\n`);
    log(`\n## ${title}\n\n${body}\n`);
  };
  const target = (name, value, ok) => targets.push([name, value, ok === null ? 'n/a' : ok ? 'met' : '**not met**']);
  async function measure(enabled, name, run) {
    if (!enabled) return null;
    try {
      return await run();
    } catch (err) {
      log(`  ${name} section failed: ${err.message}`);
      return null;
    }
  }
  return { log, md, targets, section, target, measure };
}

/** The targets section, then BENCHMARKS.md: the machine, the data, every section and bench/notes.md. */
export function writeReport({ log, md, targets, section, quick }, { started, machine, dataTable }) {
  section('Targets (2-core machine; benchmark figures, not test assertions)', table(['target', 'measured', ''], targets));
  const notes = readFileSync(path.join(ROOT, 'bench', 'notes.md'), 'utf8');
  const doc = [
    '# censo-api benchmarks',
    '',
    `Written by \`npm run bench${quick ? ' -- --quick' : ''}\` (\`bench/run.mjs\`); do not edit by hand, edit \`bench/notes.md\` for the prose. Total run time ${((Date.now() - started) / 60000).toFixed(1)} min.`,
    '',
    machine,
    '',
    '## Data',
    '',
    dataTable,
    '',
    ...md,
    notes.trim(),
    '',
  ].join('\n');
  // Keep the Load section written by `npm run load` (scripts/load.mjs) across bench re-runs.
  const previous = (() => {
    try {
      return readFileSync(path.join(ROOT, 'BENCHMARKS.md'), 'utf8');
    } catch {
      return '';
    }
  })();
  const loadSection = /<!-- load:start -->[\s\S]*?<!-- load:end -->/.exec(previous)?.[0];
  writeFileSync(path.join(ROOT, 'BENCHMARKS.md'), loadSection ? `${doc.trimEnd()}\n\n${loadSection}\n` : doc);
  log(`\nWrote BENCHMARKS.md in ${((Date.now() - started) / 60000).toFixed(1)} min.`);
}
