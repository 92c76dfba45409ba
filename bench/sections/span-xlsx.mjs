// Section 3e: the xlsx request against exceljs (issue 35, bench/span-xlsx.mjs).
import { fmt, table } from '../lib.mjs';
import { runXlsxSpan } from '../span-xlsx.mjs';
import { MiB } from './report.mjs';

export async function xlsxSpanSection({ log, section, target, measure, data, RUNS }) {
  log('\nThe xlsx request against exceljs...');
  const xspan = await measure(true, 'xlsx span', () => runXlsxSpan(data, RUNS, log));
  if (xspan) {
    const m = xspan.median;
    const row = (label, key, floor, floorLabel) => [label, fmt(m[key]), floor === null ? '' : fmt(m[floor]), floorLabel];
    section(
      '3e. The xlsx request against exceljs',
      [
        `\`POST /api/divergencias-rf\` with p100k's xlsx (${(xspan.bodyBytes / MiB).toFixed(1)} MiB, ${fmt(xspan.rows)} return rows; answer ${(xspan.answerBytes / MiB).toFixed(1)} MiB of JSON, ${fmt(xspan.divergencias)} divergences), embedded deployment, one request at a time over a fresh connection, timed from the client's first byte to the answer's last, against exceljs's streaming reader iterating the same file's rows and doing nothing else (\`bench/one.mjs exceljs\`, a fresh process), run before or after the request in turn. ${xspan.runs} rounds after a warm-up (\`bench/span-xlsx.mjs\`); medians in ms. Floors in the same round: the same body to a bare \`http\` server that only drains it and the same answer sent back by it; the core (read + divergence rules) and the whole job (the same plus writing the JSON result file) each alone in a fresh process.`,
        '',
        table(
          ['part', 'ms (median)', 'floor ms', 'floor'],
          [
            row(
              'upload (client encoding while sending, server storing)',
              'upload',
              'uploadFloor',
              'loopback to a draining server, same client',
            ),
            row('server: until the answer starts', 'server', null, ''),
            row('… the job (jobMs)', 'job', 'jobAlone', 'the same job alone (read, rules, result file)'),
            row('… of which reading the return and the rules', 'core', null, 'the core alone, fresh process'),
            row('… the server beyond the job', 'serverBeyondJob', null, ''),
            row('download of the answer', 'download', 'downloadFloor', 'a bare server sending the same bytes'),
            row('**the request, first byte to last**', 'request', null, ''),
            row('exceljs iterating the rows', 'exceljs', null, ''),
            row('(client JSON.parse of the answer, not counted)', 'parse', null, ''),
          ],
        ),
        '',
        `Same-round ratios, the request to exceljs: median ${xspan.ratio.toFixed(2)}×, every round between ${xspan.ratioMin.toFixed(2)}× and ${xspan.ratioMax.toFixed(2)}× (${xspan.rounds.map((r) => (r.request / r.exceljs).toFixed(2)).join(', ')}).`,
      ].join('\n'),
    );
    target(
      'the xlsx request (p100k, first byte to last) ≤ 0.35× exceljs iterating the rows, in every round',
      `${xspan.ratioMin.toFixed(2)}–${xspan.ratioMax.toFixed(2)}× (median ${xspan.ratio.toFixed(2)}×; ${fmt(m.request)} / ${fmt(m.exceljs)} ms)`,
      xspan.ratioMax <= 0.35,
    );
  } else {
    section('3e. The xlsx request against exceljs', '_Failed, see the console output and .bench/logs._');
  }
}
