// Section 3d: the same span on Node 24, with and without the API's collector settings.
import path from 'node:path';
import { fmt, node24, runNodeJson, table } from '../lib.mjs';

export async function spanNode24Section({ log, section, target, measure, RUNS }) {
  const nodeImage = node24();
  log(`\nThe json span on Node 24 (${nodeImage ?? 'no Node 24 binary: .ci/run unpacks one, or set BENCH_NODE24'})...`);
  const span24 = await measure(nodeImage !== null, 'span on Node 24', () =>
    runNodeJson([path.join('bench', 'span.mjs'), String(RUNS), '--untuned-before', '--json'], { node: nodeImage, timeoutMs: 600_000 }),
  );
  if (span24) {
    const m = span24.median;
    const row = (label, key) => [label, fmt(m[`before${key[0].toUpperCase()}${key.slice(1)}`]), fmt(m[key])];
    section(
      `3d. The same span on Node ${span24.node}, the image's runtime`,
      [
        `Section 3c's request and floors run by \`node bench/span.mjs ${RUNS} --untuned-before\` under Node ${span24.node} (\`npm run bench\` itself runs on the machine's ${process.version}). The first column is the same build of the API with \`services/api/src/heap-tuning.ts\` emptied (\`apiWithoutHeapTuning\` in \`bench/before.mjs\`), alternating with it in each round; medians in ms.`,
        '',
        table(
          ['part', 'without the collector settings', 'with them'],
          [
            row('upload', 'upload'),
            row('server: until the answer starts', 'server'),
            row('… of which the job (jobMs)', 'job'),
            row('download of the answer', 'download'),
            row('client JSON.parse of the answer', 'parse'),
            row('**whole span**', 'total'),
          ],
        ),
        '',
        `A bare JSON.parse of the upload: ${fmt(m.bareParse)} ms. Same-round ratios to it: **${span24.ratio.toFixed(2)}×** with the settings, ${span24.ratioBefore.toFixed(2)}× without.`,
      ].join('\n'),
    );
    target(
      `json client to client on Node ${span24.node} ≤ 3× a bare JSON.parse`,
      `${span24.ratio.toFixed(2)}× (without the collector settings: ${span24.ratioBefore.toFixed(2)}×)`,
      span24.ratio <= 3,
    );
  } else {
    section(
      "3d. The same span on Node 24, the image's runtime",
      nodeImage ? '_Failed, see the console output._' : '_No Node 24 binary: not run._',
    );
  }
}
