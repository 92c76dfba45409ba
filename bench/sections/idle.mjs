// Section 9: what a deployment spends while nothing happens (bench/idle.mjs): an idle API and
// worker, the embedded process, and a CLI waiting on a batch that does not move.
import { runIdle } from '../idle.mjs';
import { fmt, table } from '../lib.mjs';

export async function idleSection({ log, section, target, measure, quick }) {
  log('\nIdle: what each process spends while nothing happens...');
  const r = await measure(true, 'idle', () => runIdle({ seconds: quick ? 20 : 60, log }));
  if (!r) return;
  const rows = [];
  const all = [];
  for (const [picture, label] of [
    ['queue', 'queue mode, no request'],
    ['embedded', 'embedded mode, no request'],
    ['cli', 'a CLI waiting on a batch'],
  ]) {
    for (const p of r[picture].processes) {
      rows.push([label, p.name, fmt(p.cpuPercent, 2)]);
      all.push(p.cpuPercent);
    }
    rows.push([
      label,
      'Redis',
      `${fmt(r[picture].redisCpuPercent, 2)} (${fmt(r[picture].redisCallsPerSecond, 1)} calls/s: ${r[picture].topCommands
        .slice(0, 3)
        .map((c) => `${c.name} ${fmt(c.perSecond, 1)}`)
        .join(', ')})`,
    ]);
  }
  section(
    '9. Idle: what waiting costs',
    `Each picture measured over ${r.seconds} s after a 10 s warm-up, on a Redis server of its own (so only these ` +
      "processes' commands are counted); CPU from /proc and from Redis's INFO cpu, as a percentage of one core.\n\n" +
      table(['picture', 'process', 'CPU % of a core'], rows),
  );
  const worst = Math.max(...all);
  target('an idle API, worker, embedded process or waiting CLI: ≤ 0.5 % of a core each', `${worst.toFixed(2)} % at most`, worst <= 0.5);
}
