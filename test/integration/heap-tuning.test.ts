// The API process's collector settings (services/api/src/heap-tuning.ts, imported first by
// main.ts). A fresh process churns through 400 MB of 64 KiB Buffers, each alive for a few
// allocations as an upload's socket reads are on their way to the disk, once as the API starts
// (the module imported first) and once without it, counting full collections. On V8 13.6 without
// the settings that churn costs 4-6 of them; with them, none. On V8 before 13.6 the module sets
// nothing, and the process must say nothing about it either (an unknown V8 flag is reported on
// stderr).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { onThisMachine } from '../helpers/deadline.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TUNING = pathToFileURL(path.join(ROOT, 'services/api/dist/heap-tuning.js')).href;

const CHURN = `
import { PerformanceObserver, constants } from 'node:perf_hooks';
let major = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
});
observer.observe({ entryTypes: ['gc'] });
const live = [];
for (let i = 0; i < 6400; i++) {
  const chunk = Buffer.allocUnsafe(65536);
  chunk[0] = i;
  live.push(chunk);
  if (live.length > 8) live.shift();
  if (i % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
}
await new Promise((resolve) => setTimeout(resolve, 50));
observer.disconnect();
const tuning = process.argv[1] ? await import(process.argv[1]) : null;
console.log(JSON.stringify({
  major,
  v8: process.versions.v8,
  flags: tuning ? tuning.heapFlagsFor(process.versions.v8) : null,
  gating: tuning ? ['11.3.244.8-node.38', '12.4.254.21-node.33', '13.5.212.10', '13.6.233.17-node.53', '14.2.1'].map((v) => tuning.heapFlagsFor(v).length) : null,
}));
`;

interface Churned {
  readonly major: number;
  readonly v8: string;
  readonly flags: readonly string[] | null;
  readonly gating: readonly number[] | null;
  readonly stderr: string;
}

async function churn(tuned: boolean): Promise<Churned> {
  // The tuned process imports the module before its first line runs, as main.ts does; the
  // untuned one imports it only after the churn, to read its answers.
  const args = [...(tuned ? ['--import', TUNING] : []), '--input-type=module', '-e', CHURN, TUNING];
  const { stdout, stderr } = await promisify(execFile)(process.execPath, args, { timeout: onThisMachine(60_000) });
  return { ...(JSON.parse(stdout.trim()) as Omit<Churned, 'stderr'>), stderr };
}

describe("the API's collector settings", () => {
  it('apply from V8 13.6 on, and nowhere else', async () => {
    const { gating } = await churn(false);
    expect(gating).toEqual([0, 0, 0, 2, 2]);
  });

  it('keep short-lived Buffers out of full collections on this runtime, without a word on stderr', async () => {
    const tuned = await churn(true);
    expect(tuned.stderr).toBe('');
    const [major = 0, minor = 0] = tuned.v8.split('.').map(Number);
    if (major > 13 || (major === 13 && minor >= 6)) {
      expect(tuned.flags).toEqual(['--external-memory-accounted-in-global-limit', '--scavenger-max-new-space-capacity-mb=16']);
      const untuned = await churn(false);
      // The churn does provoke full collections here without the settings, so the next line can fail.
      expect(untuned.major).toBeGreaterThanOrEqual(3);
      expect(tuned.major).toBeLessThanOrEqual(1);
    } else {
      expect(tuned.flags).toEqual([]);
    }
  });
});
