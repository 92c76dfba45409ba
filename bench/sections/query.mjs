// Section 4: the query route and its CSV export, on PostgreSQL (bench/query.mjs).
import { fmt, table } from '../lib.mjs';
import { runQuery } from '../query.mjs';
import { MiB } from './report.mjs';

export async function querySection({ log, section, target, measure, quick, databaseUrl, pgVersion }) {
  log('\nQuery route...');
  const query = await measure(pgVersion, 'query', () => runQuery({ quick, databaseUrl, log }));
  if (query) {
    const q = query;
    section(
      '4. Query route',
      [
        `\`GET /api/query?query=audits\` on ${fmt(q.rows)} rows (schema \`censo_bench\`, loaded with \`generate_series\`), ${q.requests} sequential requests each over loopback (client-side time, JSON body read in full). The deep page uses the cursor the route hands out after id ${fmt(q.depth)} (built with the route's own \`encodeCursor\` and checked against a cursor the route returned); OFFSET and keyset rows are the same page as plain SQL over one connection.`,
        '',
        table(
          ['request', 'p50 ms', 'p99 ms', 'min ms'],
          [
            ['HTTP first page (1000 rows)', fmt(q.first.p50, 2), fmt(q.first.p99, 2), fmt(q.first.min, 2)],
            [`HTTP page at depth ${fmt(q.depth)} (keyset cursor)`, fmt(q.deep.p50, 2), fmt(q.deep.p99, 2), fmt(q.deep.min, 2)],
            [`SQL \`OFFSET ${q.depth} LIMIT 1000\``, fmt(q.offset.p50, 2), fmt(q.offset.p99, 2), fmt(q.offset.min, 2)],
            [`SQL \`WHERE id > ${q.depth} … LIMIT 1000\``, fmt(q.keyset.p50, 2), fmt(q.keyset.p99, 2), fmt(q.keyset.min, 2)],
          ],
        ),
        '',
        table(
          ['CSV export of all rows', 'time ms', 'rows/s', 'MiB sent', 'API RSS before', 'API RSS peak', 'growth'],
          q.csv.runs.map((r, i) => [
            `run ${i + 1}`,
            fmt(r.ms),
            fmt(r.rowsPerSec),
            (r.bytes / MiB).toFixed(1),
            fmt(r.rssBeforeMB),
            fmt(r.rssPeakMB),
            fmt(r.rssPeakMB - r.rssBeforeMB),
          ]),
        ),
        '',
        `API RSS sampled every 50 ms from /proc/<pid>/status (MiB); process peak (VmHWM) at the end: ${fmt(q.apiHwmMB)} MiB.`,
      ].join('\n'),
    );
    target(
      'query page at depth ≈ first page, ≤ 3 ms on 1M rows',
      `first ${fmt(q.first.p50, 2)} ms, depth ${fmt(q.deep.p50, 2)} ms (OFFSET ${fmt(q.offset.p50)} ms)`,
      q.deep.p50 <= 3 && q.deep.p50 <= q.first.p50 * 1.5,
    );
    target(
      'CSV ≥ 300k rows/s with flat RSS',
      `${fmt(q.csv.rowsPerSec)} rows/s, RSS +${fmt(q.csv.rssGrowthMB)} MiB during export`,
      q.csv.rowsPerSec >= 300_000 && q.csv.rssGrowthMB <= 100,
    );
  } else {
    section('4. Query route', pgVersion ? '_Failed, see the console output._' : '_PostgreSQL not reachable: skipped._');
    target('query page at depth ≈ first page', 'not measured', null);
    target('CSV ≥ 300k rows/s with flat RSS', 'not measured', null);
  }
}
