// Section 3c: the json span as a client sees it (bench/span.mjs), against the service at BEFORE_REV.
import { BEFORE_REV, treeAt } from '../before.mjs';
import { fmt, table } from '../lib.mjs';
import { runSpan } from '../span.mjs';
import { MiB } from './report.mjs';

export async function spanSection({ log, section, target, data, RUNS }) {
  log('\nThe json span, client to client...');
  try {
    // The service as a whole at BEFORE_REV: today's API no longer runs on that revision's core alone
    // (it imports what the core has gained since), which is what made this section fail in an earlier run.
    const span = await runSpan(data, RUNS, log, { before: { apiMain: treeAt(BEFORE_REV).apiMain } });
    const m = span.median;
    const part = (label, ms, before, floor, floorLabel) => [
      label,
      before === null ? '' : fmt(before),
      fmt(ms),
      floor === null ? '' : fmt(floor),
      floorLabel,
    ];
    section(
      '3c. A 24 MB json return, client to client',
      [
        `\`POST /api/divergencias-rf\` with j25 (${(span.bodyBytes / MiB).toFixed(1)} MiB, answer ${(span.answerBytes / MiB).toFixed(1)} MiB), embedded deployment, one request at a time over a fresh connection, timed from the client's first byte to the answer parsed. ${span.runs} rounds after a warm-up; each round runs the request, then the floors, so the ratios are same-round. The first column is the same streaming request to a second API process, the whole service as it was at ${BEFORE_REV} (\`bench/before.mjs\` \`treeAt\`), first or second in turn in each round. Parts: *upload* is until the client's last byte is sent (the body is encoded while it is sent: a FormData holding \`fs.openAsBlob(file)\`); *server* from there to the answer's head (the job, the result file opened); *job* is the API log's \`jobMs\`; *download* to the answer's last byte; *parse* the client's \`JSON.parse\` of it. Floors: the same body to a bare \`http\` server that only drains it, the same answer sent back by it, \`readFile\` + \`JSON.parse\` of the upload on a fresh worker thread, and the multipart encoding alone.`,
        '',
        table(
          ['part', `service at ${BEFORE_REV}, ms`, 'ms (median)', 'floor ms', 'floor'],
          [
            part(
              'upload (client encoding while sending, server storing)',
              m.upload,
              m.beforeUpload,
              m.uploadFloor,
              'loopback to a draining server, same client',
            ),
            part('server: until the answer starts', m.server, m.beforeServer, m.jobFloor, 'readFile + JSON.parse on a thread'),
            part('… of which the job (jobMs)', m.job, m.beforeJob, null, ''),
            part('download of the answer', m.download, m.beforeDownload, m.downloadFloor, 'a bare server sending the same bytes'),
            part('client JSON.parse of the answer', m.parse, m.beforeParse, m.parse, 'itself'),
            part(
              '**whole span**',
              m.total,
              m.beforeTotal,
              m.bareParse,
              'bare readFile + JSON.parse of the upload (main thread, median of three)',
            ),
            part('whole span, client building the body in memory first', m.totalInMemory, null, m.bareParse, ''),
            part('(multipart encoding alone, file-backed)', m.encodeOnly, null, null, ''),
          ],
        ),
        '',
        `Same-round ratios to a bare JSON.parse: ${span.ratio.toFixed(2)}× with a streaming client (the service at ${BEFORE_REV}, alternating: ${span.ratioBefore.toFixed(2)}×), ${span.ratioInMemory.toFixed(2)}× when the client reads the file and builds the whole body before sending.`,
      ].join('\n'),
    );
    target(
      'json client to client (j25, encode → answer parsed) ≤ 3× a bare JSON.parse',
      `${span.ratio.toFixed(2)}× (service at ${BEFORE_REV}: ${span.ratioBefore.toFixed(2)}×; in-memory client: ${span.ratioInMemory.toFixed(2)}×)`,
      span.ratio <= 3,
    );
  } catch (err) {
    log(`  span failed: ${err.stack ?? err}`);
    section('3c. A 24 MB json return, client to client', '_Failed, see the console output and .bench/logs._');
  }
}
