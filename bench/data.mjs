// The benchmark's data sets, generated on first use into .bench/ (deterministic, so a set is
// reused as long as its summary matches what this file asks for).
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DATA } from './lib.mjs';
import { generate } from './gen-big.mjs';

export const LIMIT_BYTES = 25 * 1024 * 1024;

// Sizes chosen from measurement: 100k persons give xlsx 12.2 MiB, json 57.1 MiB, txt 20.7 MiB.
export const SETS = {
  // The reference 300k-row return, and its text file (the large HTTP upload).
  p100k: { persons: 100_000, formats: ['txt', 'xlsx'] },
  // The largest xlsx under the 25 MB upload limit (600k rows).
  x25: { persons: 200_000, formats: ['xlsx'] },
  // The largest json under the limit (~131k rows).
  j25: { persons: 43_700, formats: ['json'] },
  // The largest txt under the limit, with its xlsx return (its json would be over the limit).
  t25: { persons: 120_000, formats: ['txt', 'xlsx'] },
};

const FILE = { txt: 'censo.txt', json: 'retorno.json', xlsx: 'retorno.xlsx' };

export async function ensureData(log = console.log) {
  const out = {};
  for (const [name, set] of Object.entries(SETS)) {
    const dir = path.join(DATA, name);
    const summaryPath = path.join(dir, 'expected-summary.json');
    const files = Object.fromEntries(set.formats.map((f) => [f, path.join(dir, FILE[f])]));
    let summary = existsSync(summaryPath) ? JSON.parse(readFileSync(summaryPath, 'utf8')) : null;
    if (!summary || summary.persons !== set.persons || !Object.values(files).every((f) => existsSync(f))) {
      const t0 = Date.now();
      summary = await generate({ persons: set.persons, out: dir, formats: set.formats });
      log(`  generated ${name} (${set.persons} persons) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    const sizes = Object.fromEntries(Object.entries(files).map(([f, p]) => [f, statSync(p).size]));
    for (const [f, bytes] of Object.entries(sizes)) {
      if (bytes > LIMIT_BYTES) throw new Error(`${name}/${f} is ${bytes} bytes, over the 25 MB upload limit: adjust SETS`);
    }
    out[name] = { ...summary, dir, files, sizes };
  }
  return out;
}
