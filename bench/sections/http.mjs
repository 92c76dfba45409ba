// Section 3: end to end over HTTP, embedded and queue modes (bench/http.mjs).
import { runHttp } from '../http.mjs';
import { fmt, table, versionOf } from '../lib.mjs';
import { MiB } from './report.mjs';

export async function httpSection({ log, section, target, measure, data, quick, redisUrl, redisVersion }, core) {
  log('\nHTTP (autocannon)...');
  const http = await measure(true, 'HTTP', () => runHttp(data, { quick, redisUrl: redisVersion ? redisUrl : null, log }));
  if (http) {
    const codes = (s) =>
      Object.entries(s.statusCodes ?? {})
        .filter(([c]) => c !== '200')
        .map(([c, n]) => `${n}×${c}`)
        .join(' ') || '—';
    const rows = [];
    for (const r of http.results) {
      const name =
        r.workers === 0 ? 'embedded (one process, thread pool)' : `queue: API + ${r.workers} worker process${r.workers > 1 ? 'es' : ''}`;
      rows.push([
        name,
        'small, 50 conn',
        fmt(r.small50.requests),
        fmt(r.small50.reqPerSec),
        fmt(r.small50.p50),
        fmt(r.small50.p99),
        `${r.small50.errors + r.small50.timeouts} / ${codes(r.small50)}`,
        r.workers ? `${fmt(r.overheadP50At50, 1)}` : '',
      ]);
      rows.push([
        name,
        'small, 1 conn',
        fmt(r.small1.requests),
        fmt(r.small1.reqPerSec),
        fmt(r.small1.p50),
        fmt(r.small1.p99),
        `${r.small1.errors + r.small1.timeouts} / ${codes(r.small1)}`,
        r.workers ? `${fmt(r.overheadP50At1, 1)} (mean ${fmt(r.overheadMeanAt1, 2)})` : '',
      ]);
      rows.push([
        name,
        'large, 2 conn',
        fmt(r.large.requests),
        fmt(r.large.reqPerSec, 2),
        fmt(r.large.p50),
        fmt(r.large.p99),
        `${r.large.errors + r.large.timeouts} / ${codes(r.large)}`,
        '',
      ]);
    }
    const mem = http.results.map((r) => `${r.mode} ${fmt(r.apiPeakRssMB)} MiB`).join(', ');
    const embeddedRun = http.results.find((r) => r.workers === 0);
    if (embeddedRun?.json25Ms) {
      const ratio = embeddedRun.json25Ms / core['json25-parse'].ms;
      target(
        'json end to end (POST /api/divergencias-rf, j25, embedded) ≤ 3× a bare JSON.parse',
        `${fmt(embeddedRun.json25Ms)} ms = ${ratio.toFixed(2)}× (JSON.parse ${fmt(core['json25-parse'].ms)} ms)`,
        ratio <= 3,
      );
    }
    if (embeddedRun) {
      target(
        'embedded process peak during the large-upload phase ≤ 600 MiB',
        `${fmt(embeddedRun.apiPeakRssMB)} MiB`,
        embeddedRun.apiPeakRssMB <= 600,
      );
    }
    section(
      '3. End to end over HTTP',
      [
        `Loopback, autocannon ${versionOf('autocannon')} programmatic API, prebuilt multipart bodies. Small: \`test/fixtures/basico/retorno.json\` (${fmt(http.smallBytes)} B body) → \`POST /api/divergencias-rf\` for ${http.smallSeconds} s (5 s at 1 connection). Large: p100k xlsx + txt (${(http.largeBytes / MiB).toFixed(1)} MiB body, ${fmt(http.largeRows)} return rows) → \`POST /api/retorno-rf\`, ${http.largeAmount} requests. Each mode is a fresh deployment (\`services/api/dist/main.js\`, and \`--role=api\` + \`services/worker/dist/main.js\` processes with REDIS_URL and a unique QUEUE_PREFIX), warmed up first. Latencies in ms. Queue overhead = queue p50 − embedded p50 in the same run. Everything (API, workers, Redis, autocannon) shares the 2 cores.`,
        '',
        redisVersion ? '' : '_Redis not reachable: queue modes skipped._',
        table(['mode', 'load', 'requests', 'req/s', 'p50', 'p99', 'errors / non-200', 'queue overhead p50'], rows),
        '',
        `API process peak RSS (VmHWM): ${mem}. In embedded mode the jobs' worker threads live in the API process.`,
      ].join('\n'),
    );
    const emb = http.results.find((r) => r.workers === 0);
    const q1 = http.results.find((r) => r.workers === 1);
    const q2 = http.results.find((r) => r.workers === 2);
    target(
      'small uploads ≥ 300 req/s, 0 errors (embedded / queue 1w / queue 2w)',
      http.results
        .map((r) => `${fmt(r.small50.reqPerSec)} req/s, ${r.small50.errors + r.small50.timeouts + r.small50.non2xx} err`)
        .join(' / '),
      http.results.every((r) => r.small50.reqPerSec >= 300 && r.small50.errors + r.small50.timeouts + r.small50.non2xx === 0),
    );
    if (q1)
      target(
        'queue overhead ≤ 3 ms p50 at 50 in flight (1w / 2w)',
        `${fmt(q1.overheadP50At50, 1)} / ${fmt(q2?.overheadP50At50, 1)} ms (at 1 in flight: ${fmt(q1.overheadP50At1, 1)} / ${fmt(q2?.overheadP50At1, 1)} ms)`,
        q1.overheadP50At50 <= 3 && (q2?.overheadP50At50 ?? 0) <= 3,
      );
    else target('queue overhead ≤ 3 ms p50 at 50 in flight', 'Redis not reachable', null);
    void emb;
  } else {
    section('3. End to end over HTTP', '_Failed, see the console output and .bench/logs._');
  }
}
