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
      // The goal's processes (issue 47): an idle deployment and the waiting CLI itself. The API
      // that answers the CLI's looks has tasks waiting, and its reconciler looks at them (below).
      if (!p.name.startsWith('API (')) all.push(p.cpuPercent);
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
    `Each picture measured over ${r.seconds} s after a 30 s warm-up, on a Redis server of its own (so only these ` +
      "processes' commands are counted); CPU from /proc and from Redis's INFO cpu, as a percentage of one core.\n\n" +
      table(['picture', 'process', 'CPU % of a core'], rows) +
      '\n\nWith tasks waiting (the third picture: the batch has no worker), the API is not idle: every 2 s its ' +
      "reconciler reads the state of up to 100 waiting tasks' jobs, in case an end's hint was missed, and that " +
      'is the Redis calls of that picture; it is bounded by the page (100 tasks a pass), not by the backlog.',
  );
  const worst = Math.max(...all);
  target(
    'idle: API, worker, Redis, the embedded process and a CLI waiting on a batch ≤ 0.5 % of a core each',
    `${worst.toFixed(2)} % at most`,
    worst <= 0.5,
  );
}
