// Section 5: the censo CLI (bench/cli.mjs).
import { loteReport, runCli } from '../cli.mjs';
import { fmt, table } from '../lib.mjs';

export async function cliSection({ log, section, target, data, RUNS }, core) {
  log('\nCLI (censo lote)...');
  const cli = await runCli(data, Math.min(RUNS, 3), log);
  const loteTable = loteReport(cli);
  section(
    '5. The censo CLI',
    [
      `Whole \`node cli/dist/main.js\` processes, medians of ${Math.min(RUNS, 3)} alternating runs. \`lote\` (JSON to /dev/null) on school returns (xlsx, ${fmt(cli.rowsPerFile)} rows each): one file alone (what a run costs besides its files), 200 copies in 10 folders, 1,000 hard links in 50; \`divergencias\` on the x25 return (${fmt(cli.bigRows)} rows).`,
      '',
      table(
        ['run', 'time ms', 'files/s', 'return rows/s'],
        [...loteTable.rows, ['divergencias, one 25 MB return', fmt(cli.bigMs), '', fmt(cli.bigRows / (cli.bigMs / 1000))]],
      ),
      '',
      `${loteTable.text} The single-file core figure (section 1) is ${fmt(core['xlsx25-core'].rowsPerSec)} rows/s.`,
    ].join('\n'),
  );
  target(
    `censo lote ≥ 1.7× the one-thread rate on ${cli.threads} cores`,
    `${cli.many.speedup.toFixed(2)}× on 1,000 files (200: ${cli.small.speedup.toFixed(2)}×; fixed cost left out: ${cli.steady.speedup.toFixed(2)}×)`,
    cli.many.speedup >= 1.7,
  );
  target(
    'censo lote: two threads in one process ≥ 0.95× two one-thread processes on the same files (every round)',
    `${cli.processes.threadsShare.toFixed(2)} (rounds ${cli.processes.threadsShares.map((x) => x.toFixed(2)).join(', ')}; two processes ${cli.processes.speedup.toFixed(2)}× one, two threads ${cli.many.speedup.toFixed(2)}×)`,
    Math.min(...cli.processes.threadsShares) >= 0.95,
  );
}
