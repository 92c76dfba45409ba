// Where the xlsx core spends its time: a CPU profile of bench/one.mjs on the x25 return.
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { DATA, ROOT, fmt, runNodeJson, table } from '../lib.mjs';

export async function profileSection({ section, data }) {
  const profDir = path.join(DATA, 'prof');
  rmSync(profDir, { recursive: true, force: true });
  mkdirSync(profDir, { recursive: true });
  await runNodeJson(['--cpu-prof', `--cpu-prof-dir=${profDir}`, path.join('bench', 'one.mjs'), 'core', data.x25.files.xlsx]);
  const top = topFrames(
    path.join(
      profDir,
      readdirSync(profDir).find((f) => f.endsWith('.cpuprofile')),
    ),
    12,
  );
  section(
    'Where the xlsx core spends its time',
    [
      `\`node --cpu-prof bench/one.mjs core .bench/x25/retorno.xlsx\` (self time; "(idle)" is the main thread waiting for zlib's inflate on the libuv pool):`,
      '',
      table(['self ms', '%', 'function', 'location'], top),
    ].join('\n'),
  );
}

function topFrames(file, n) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map();
  let total = 0;
  p.samples.forEach((s, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    const f = byId.get(s).callFrame;
    const key = `${f.functionName || '(anonymous)'}\t${f.url ? `${f.url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${f.lineNumber + 1}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, t]) => {
      const [fn, loc] = k.split('\t');
      return [fmt(t / 1000), ((100 * t) / total).toFixed(1), `\`${fn}\``, loc ? `\`${loc}\`` : ''];
    });
}
