// Section 0: the current tree against the last release in the same run (bench/release.mjs). It also
// writes the report's first lines: in a red GitHub alert, every part of the report that is more than
// 5 % slower than the release (or whose peak memory grew more than 10 %), and a line in red at the
// end of the terminal output (`releaseVerdictLine`).
import { fmt, table } from '../lib.mjs';
import { HEAVIER, SLOWER, releaseRef, runRelease, verdict } from '../release.mjs';

/** The section's title: splicing (`--only release`) finds it by this line, so it names no ref. */
export const RELEASE_TITLE = '0. Against the last release, in the same run';
export const RELEASE_START = '<!-- release:start -->';
export const RELEASE_END = '<!-- release:end -->';

const GROUPS = {
  core: 'the core, one process per case (as sections 1, 2 and 2b run it)',
  http: 'end to end over HTTP, an embedded deployment of each build (as sections 3, 3c and 3e)',
  cli: 'the `censo` CLI, whole processes (as section 5)',
};
const ANCHORS = { parse: 'JSON.parse', exceljs: 'exceljs' };
const pct = (ratio) => `${ratio >= 1 ? '+' : '−'}${Math.abs((ratio - 1) * 100).toFixed(0)} %`;

export async function releaseSection(run) {
  const { log, section, target, measure, data, quick, RUNS } = run;
  // Three rounds even in a quick run: the median of two same-round ratios is their mean, and one
  // slow round on this shared machine would put a row over the 5 % line.
  const rounds = quick ? 3 : RUNS;
  log('\nAgainst the last release, alternating in this run...');
  let release;
  try {
    release = releaseRef();
  } catch (err) {
    log(`  ${err.message}`);
    run.releaseTop = alert('WARNING', [`The comparison with the last release did not run: ${err.message}.`]);
    section(RELEASE_TITLE, `_Failed: ${err.message}._`);
    return;
  }
  const result = await measure(true, 'release comparison', () => runRelease(data, rounds, log, release));
  if (!result) {
    run.releaseTop = alert('WARNING', [
      `The comparison with the release ${release.ref} did not run to its end (see the console output and .bench/logs): nothing in this report says whether the current tree is slower.`,
    ]);
    section(RELEASE_TITLE, '_Failed, see the console output and .bench/logs._');
    return;
  }
  const { rows, current } = result;
  const rel = release.commit === release.ref ? release.ref : `${release.ref} (${release.commit})`;
  // The rounds' spread beside the median: a row just over the line in a quick run may be noise.
  const ratioCell = (r) =>
    `${r.ratio > SLOWER ? `**${r.ratio.toFixed(2)}×, ${pct(r.ratio)} slower**` : `${r.ratio.toFixed(2)}×`} (${r.ratioMin.toFixed(2)}–${r.ratioMax.toFixed(2)})`;
  const rssCell = (x) => (!Number.isFinite(x) ? '' : x > HEAVIER ? `**${x.toFixed(2)}×**` : `${x.toFixed(2)}×`);
  const anchorCell = (r) => (r.anchor ? `${r.release.anchor.toFixed(2)}× / ${r.current.anchor.toFixed(2)}× ${ANCHORS[r.anchor]}` : '');
  const H = [
    'case',
    `release ${release.commit}, ms`,
    `current ${current.label}, ms`,
    'current / release',
    'peak RSS MiB, release / current',
    'peak RSS current / release',
    'same-round anchor, release / current',
  ];
  const body = [
    `The release is **${rel}**, ${release.how}; the current build is ${current.label} (what \`npm run build\` just built). The release is extracted with \`git archive\` and built under \`.bench/tree-${release.commit}/\` with node_modules of its own whose \`@censo/*\` point into it (\`bench/before.mjs\` \`treeAt\`), beside the current tree, and every case runs on both in ${result.runs} rounds: case by case, the release first in odd rounds and the current build first in even ones (\`bench/release.mjs\`). Times and peak RSS (the process's \`VmHWM\`) are medians; **current / release is the median of the same-round ratios** (their lowest and highest in brackets), and a row more than ${((SLOWER - 1) * 100).toFixed(0)} % slower (or a peak RSS more than ${((HEAVIER - 1) * 100).toFixed(0)} % higher) is in bold and named at the top of this file. The anchors are measured once a round and divided into that round's figures: a bare \`readFile\` + \`JSON.parse\` of j25 in the bench process (median of three, ${fmt(result.anchors.parse)} ms), and exceljs's streaming reader iterating p100k's rows in a fresh process (${fmt(result.anchors.exceljs)} ms). Figures of this section are compared with each other only, never with another run's.`,
  ];
  for (const [group, title] of Object.entries(GROUPS)) {
    const mine = rows.filter((r) => r.group === group);
    const lines = mine.map((r) => [
      r.label,
      fmt(r.release.ms),
      fmt(r.current.ms),
      ratioCell(r),
      Number.isFinite(r.release.rssMB) ? `${fmt(r.release.rssMB)} / ${fmt(r.current.rssMB)}` : '',
      rssCell(r.rssRatio),
      anchorCell(r),
    ]);
    if (group === 'http')
      lines.push([
        'the embedded API process, peak RSS over the rows above',
        '',
        '',
        '',
        `${fmt(result.apiPeak.release)} / ${fmt(result.apiPeak.current)}`,
        rssCell(result.apiPeak.current / result.apiPeak.release),
        '',
      ]);
    body.push('', `**${title[0].toUpperCase()}${title.slice(1)}**`, '', table(H, lines));
  }
  section(RELEASE_TITLE, body.join('\n'));

  const v = verdict(result);
  run.releaseVerdict = { ...v, release: rel };
  run.releaseTop = topOfReport(v, rel, result);
  const worst = [...rows].sort((a, b) => b.ratio - a.ratio)[0];
  target(
    `no case more than ${((SLOWER - 1) * 100).toFixed(0)} % slower than the last release (section 0, same run)`,
    `${v.slower.length} of ${rows.length} slower (release ${rel}; the slowest ${worst.id} ${worst.ratio.toFixed(2)}×)`,
    v.slower.length === 0,
  );
  const row = (id) => rows.find((r) => r.id === id);
  const json = row('http-json25');
  target(
    'the json return through the service (j25, embedded, encode → answer parsed) ≤ 3.0× a bare JSON.parse (section 0)',
    `${json.current.anchor.toFixed(2)}× (release ${rel}: ${json.release.anchor.toFixed(2)}×)`,
    json.current.anchor <= 3,
  );
  const xlsx = row('http-xlsx100');
  target(
    'the xlsx request (p100k, embedded, first byte → last) ≤ 0.30× exceljs iterating the file (section 0)',
    `${xlsx.current.anchor.toFixed(2)}× (release ${rel}: ${xlsx.release.anchor.toFixed(2)}×)`,
    xlsx.current.anchor <= 0.3,
  );
  const cli = rows.filter((r) => r.group === 'cli');
  target(
    `the CLI's peak RSS ≤ ${HEAVIER.toFixed(1)}× the last release's (censo divergencias; section 0)`,
    cli
      .map((r) => `${r.id.replace('cli-', '')} ${fmt(r.current.rssMB)} / ${fmt(r.release.rssMB)} MiB = ${r.rssRatio.toFixed(2)}×`)
      .join('; '),
    cli.every((r) => r.rssRatio <= HEAVIER),
  );
}

/** A GitHub alert block (`> [!CAUTION]` renders red, `[!TIP]` green) between the markers the splice looks for. */
function alert(kind, lines) {
  return [RELEASE_START, `> [!${kind}]`, ...lines.map((line) => (line ? `> ${line}` : '>')), RELEASE_END].join('\n');
}

/** The report's first lines: what is slower than the release, in words, or that nothing is. */
function topOfReport(v, rel, result) {
  const when = `measured in this run, alternating with it (${result.runs} rounds; section 0)`;
  if (v.ok)
    return alert('TIP', [
      `No case is more than ${((SLOWER - 1) * 100).toFixed(0)} % slower than the last release, ${rel}, nor uses more than ${((HEAVIER - 1) * 100).toFixed(0)} % more memory, ${when}.`,
    ]);
  const lines = [];
  if (v.slower.length > 0) {
    lines.push(`**Slower than the last release, ${rel}, by more than ${((SLOWER - 1) * 100).toFixed(0)} %**, ${when}:`);
    for (const [group, title] of Object.entries(GROUPS)) {
      const mine = v.slower.filter((r) => r.group === group);
      if (mine.length > 0)
        lines.push(`- **${title.split(',')[0]}**: ${mine.map((r) => `${r.label} ${r.ratio.toFixed(2)}× (${pct(r.ratio)})`).join('; ')}`);
    }
  }
  if (v.heavier.length > 0) {
    if (lines.length > 0) lines.push('');
    lines.push(`**More memory than the last release, ${rel}, by more than ${((HEAVIER - 1) * 100).toFixed(0)} %** (peak RSS):`);
    for (const r of v.heavier)
      lines.push(`- ${r.label}: ${fmt(r.current.rssMB)} MiB against ${fmt(r.release.rssMB)} MiB, ${r.rssRatio.toFixed(2)}×`);
  }
  return alert('CAUTION', lines);
}

/** The terminal's last words: red when something is slower than the release (NO_COLOR respected). */
export function releaseVerdictLine(run) {
  const v = run.releaseVerdict;
  if (!v) return null;
  const color = !process.env.NO_COLOR;
  const paint = (code, text) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  if (v.ok) return paint('32', `No case is more than ${((SLOWER - 1) * 100).toFixed(0)} % slower than the release ${v.release}.`);
  const lines = [];
  for (const r of v.slower) lines.push(`  ${r.group}: ${r.label}: ${r.ratio.toFixed(2)}× the release's time`);
  for (const r of v.heavier) lines.push(`  ${r.group}: ${r.label}: peak RSS ${r.rssRatio.toFixed(2)}× the release's`);
  return paint(
    '1;31',
    `SLOWER THAN THE RELEASE ${v.release} (more than ${((SLOWER - 1) * 100).toFixed(0)} % in time or ${((HEAVIER - 1) * 100).toFixed(0)} % in memory):\n${lines.join('\n')}`,
  );
}
