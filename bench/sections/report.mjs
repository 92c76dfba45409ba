// What every section of `npm run bench` writes to: the console, the markdown sections of
// BENCHMARKS.md and the targets table; and, at the end, the file itself.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, table } from '../lib.mjs';
import { RELEASE_END, RELEASE_START, RELEASE_TITLE } from './release.mjs';

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
export function writeReport({ log, md, targets, section, quick, releaseTop }, { started, machine, dataTable }) {
  section('Targets (2-core machine; benchmark figures, not test assertions)', table(['target', 'measured', ''], targets));
  const notes = readFileSync(path.join(ROOT, 'bench', 'notes.md'), 'utf8');
  const flags = [quick ? '--quick' : '', releaseFlag()].filter(Boolean).join(' ');
  const doc = [
    '# censo-api benchmarks',
    '',
    // What is slower than the last release comes first (section 0 writes it).
    ...(releaseTop ? [releaseTop, ''] : []),
    `Written by \`npm run bench${flags ? ` -- ${flags}` : ''}\` (\`bench/run.mjs\`); do not edit by hand, edit \`bench/notes.md\` for the prose. Total run time ${((Date.now() - started) / 60000).toFixed(1)} min.`,
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

/**
 * `npm run bench -- --only 6,9`: the sections just run, put in place of the same sections of the
 * BENCHMARKS.md a full run wrote (a new one before the targets), and their targets' rows likewise;
 * everything else in the file stays as that run measured it. The header says which were re-run.
 */
export function spliceReport({ log, md, targets, releaseTop, quick }, { only, machine }) {
  const file = path.join(ROOT, 'BENCHMARKS.md');
  let doc = readFileSync(file, 'utf8');
  const TARGETS = '## Targets (2-core machine; benchmark figures, not test assertions)';
  for (const block of md) {
    const title = block.slice(0, block.indexOf('\n'));
    const at = doc.indexOf(`${title}\n`);
    if (at >= 0) {
      const next = doc.indexOf('\n## ', at + title.length);
      doc = `${doc.slice(0, at)}${block.trimEnd()}\n${next < 0 ? '' : doc.slice(next)}`;
    } else {
      // A new section goes before the targets; section 0 before the first numbered one.
      const first = title === `## ${RELEASE_TITLE}` ? doc.indexOf('\n## 1. ') + 1 : 0;
      const before = first > 0 ? first : doc.indexOf(TARGETS);
      doc = before < 0 ? `${doc.trimEnd()}\n\n${block}` : `${doc.slice(0, before)}${block.trimEnd()}\n\n${doc.slice(before)}`;
    }
  }
  if (releaseTop) {
    const start = doc.indexOf(RELEASE_START);
    const end = doc.indexOf(RELEASE_END);
    if (start >= 0 && end > start) doc = `${doc.slice(0, start)}${releaseTop}${doc.slice(end + RELEASE_END.length)}`;
    else doc = doc.replace(/^# censo-api benchmarks\n/, (line) => `${line}\n${releaseTop}\n`);
  }
  for (const [name, value, ok] of targets) {
    const row = `| ${name} | ${value} | ${ok} |`;
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const existing = new RegExp(`^\\| ${escaped} \\|.*$`, 'm');
    if (existing.test(doc)) doc = doc.replace(existing, () => row);
    else {
      const table = doc.indexOf(TARGETS);
      const end = table < 0 ? -1 : doc.indexOf('\n\n', doc.indexOf('|---', table));
      if (end >= 0) doc = `${doc.slice(0, end)}\n${row}${doc.slice(end)}`;
    }
  }
  const flags = [quick ? '--quick' : '', releaseFlag(), `--only ${only.join(',')}`].filter(Boolean).join(' ');
  // Section 0 is asked for as `release` too; the note names it by its number.
  const names = [...new Set(only.map((name) => (name === 'release' ? '0' : name)))];
  const note = `Sections ${names.join(', ')} re-run alone (\`npm run bench -- ${flags}\`): ${machine
    .split('\n')
    .filter((line) => /Date|Load|Node/.test(line))
    .map((line) => line.replace(/^- /, ''))
    .join('; ')}`;
  // One note per set of sections re-run: an earlier note stays while some section it names still
  // holds that run's figures, and goes once this run has re-run all of them.
  doc = doc.replace(/^Sections ([\w, ]+) re-run alone.*\n\n/gm, (line, list) =>
    list.split(', ').every((name) => names.includes(name)) ? '' : line,
  );
  doc = doc.replace(/^(Written by .*)$/m, (line) => `${line}\n\n${note}`);
  writeFileSync(file, withNotes(doc));
  log(`\nSpliced sections ${only.join(', ')} into BENCHMARKS.md.`);
}

/** `--release <ref>` as the command line gave it, for the report's header ('' without it). */
function releaseFlag() {
  const at = process.argv.indexOf('--release');
  return at >= 0 ? `--release ${process.argv[at + 1]}` : '';
}

/** `doc` with bench/notes.md in place of the notes it holds (from their first heading to the load section or the end). */
export function withNotes(doc) {
  const notes = readFileSync(path.join(ROOT, 'bench', 'notes.md'), 'utf8').trim();
  // The notes begin at the first of their headings the file holds: a heading put before the
  // others in notes.md is not in a file a full run wrote before it.
  const starts = notes
    .split('\n')
    .filter((line) => line.startsWith('## '))
    .map((heading) => doc.indexOf(`\n${heading}\n`) + 1)
    .filter((at) => at > 0);
  if (starts.length === 0) return doc;
  const start = Math.min(...starts);
  const load = doc.indexOf('<!-- load:start -->', start);
  return `${doc.slice(0, start)}${notes}\n${load < 0 ? '' : `\n${doc.slice(load)}`}`;
}
