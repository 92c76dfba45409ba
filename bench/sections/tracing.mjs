// Section 8: the cost of tracing (bench/tracing.mjs): the embedded service with tracing off and
// on (sampling 1.0), alternating rounds, medians.
import { runTracing } from '../tracing.mjs';
import { fmt, table } from '../lib.mjs';

export async function tracingSection({ log, section, target, measure, quick }) {
  log('\nTracing (OpenTelemetry) off and on...');
  const r = await measure(true, 'tracing', () => runTracing({ quick, log }));
  if (!r) return;
  const rows = [
    [
      'off (no OTLP endpoint)',
      fmt(r.off.reqPerSec, 1),
      fmt(r.off.p50),
      fmt(r.off.p99),
      fmt(r.off.cpuMsPerRequest, 2),
      fmt(r.off.rssMB),
      String(r.off.errors),
    ],
    [
      'on (always_on, OTLP/HTTP)',
      fmt(r.on.reqPerSec, 1),
      fmt(r.on.p50),
      fmt(r.on.p99),
      fmt(r.on.cpuMsPerRequest, 2),
      fmt(r.on.rssMB),
      String(r.on.errors),
    ],
  ];
  const ratio = r.on.cpuMsPerRequest / r.off.cpuMsPerRequest;
  section(
    '8. Tracing (OpenTelemetry)',
    `Embedded service, small POST /api/divergencias-rf (fixture basico), ${r.connections} connections, ${r.seconds} s a round, ` +
      `${r.rounds} rounds each way alternating; medians. On: every trace sampled, exported to a local receiver ` +
      `(${fmt(r.on.exports)} exports, ${fmt(r.exportedBytes / 1024)} KiB).\n\n` +
      table(['tracing', 'req/s', 'p50 ms', 'p99 ms', 'API CPU ms / request', 'API RSS MiB', 'errors'], rows),
  );
  target('tracing on (sampling 1.0): API CPU per request ≤ 1.3× off', `${ratio.toFixed(2)}×`, ratio <= 1.3);
}
