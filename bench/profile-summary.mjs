// `node bench/profile-summary.mjs <folder> [top]`: the self time of the .cpuprofile files under
// <folder> (as BENCH_CPU_PROF writes them: one folder per process), per process, by function and
// by package or source file, so that a burst's CPU can be read as "where" without a browser.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Self time in ms of every node of one profile, keyed by `key(callFrame)`. */
function selfTimes(profile, key) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const k = key(node.callFrame);
    totals.set(k, (totals.get(k) ?? 0) + profile.timeDeltas[i] / 1000);
  }
  return totals;
}

/** `node_modules/<pkg>` for a dependency, the path inside the repo for ours, `(native)` otherwise. */
function place(frame) {
  const url = frame.url.replace(/^file:\/\//, '');
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const dep = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (dep) return dep[1];
  if (url.startsWith('node:')) return url;
  return url.split('/').slice(-3).join('/');
}

function add(into, from) {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
}

function top(totals, n) {
  const all = [...totals.values()].reduce((a, b) => a + b, 0);
  return [...totals]
    .filter(([k]) => k !== '(idle)' && k !== '(program)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `  ${v.toFixed(0).padStart(7)} ms ${((100 * v) / all).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
}

const [folder, n = '25'] = process.argv.slice(2);
if (!folder) {
  console.error('usage: node bench/profile-summary.mjs <folder> [top]');
  process.exit(2);
}
for (const processName of readdirSync(folder).filter((f) => statSync(path.join(folder, f)).isDirectory())) {
  const byFunction = new Map();
  const byPlace = new Map();
  const files = readdirSync(path.join(folder, processName)).filter((f) => f.endsWith('.cpuprofile'));
  for (const file of files) {
    const profile = JSON.parse(readFileSync(path.join(folder, processName, file), 'utf8'));
    add(
      byFunction,
      selfTimes(profile, (f) => `${f.functionName || '(anonymous)'} ${place(f)}:${f.lineNumber + 1}`),
    );
    add(byPlace, selfTimes(profile, place));
  }
  const busy = [...byPlace].filter(([k]) => k !== '(idle)' && k !== '(program)').reduce((a, [, v]) => a + v, 0);
  console.log(`\n# ${processName}: ${files.length} thread(s), ${(busy / 1000).toFixed(1)} s busy (self time, idle left out)`);
  console.log('by package or file:\n' + top(byPlace, Number(n)));
  console.log('by function:\n' + top(byFunction, Number(n)));
}
