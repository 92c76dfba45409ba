// The data sets every section reads, generated into .bench/ on first use.
import { ensureData } from '../data.mjs';
import { fmt, table } from '../lib.mjs';
import { MiB } from './report.mjs';

export async function dataSection({ log }) {
  log('\nData (generated into .bench/ on first use by bench/gen-big.mjs, deterministic):');
  const data = await ensureData(log);
  const dataRows = Object.entries(data).map(([name, d]) => [
    name,
    fmt(d.persons),
    fmt(d.rows),
    Object.entries(d.sizes)
      .map(([f, b]) => `${f} ${(b / MiB).toFixed(2)} MiB`)
      .join(', '),
  ]);
  const dataTable = table(['set', 'persons', 'return rows', 'files (limit 25 MiB each)'], dataRows);
  log(dataTable);
  return { data, dataTable };
}
