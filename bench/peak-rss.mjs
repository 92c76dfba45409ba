// Preloaded into a process whose peak memory a section wants (`node --import bench/peak-rss.mjs
// cli/dist/main.js …`): when the process exits, its peak resident set (VmHWM, in KiB) is written
// to BENCH_PEAK_FILE. Read at exit, after everything the process did; VmHWM is the process's own
// (it starts again at exec), unlike resourceUsage().maxRSS, which a child inherits from its parent.
// Worker threads inherit the flag: only the main thread writes (the figure is the whole process's).
import { readFileSync, writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_PEAK_FILE;
if (file && isMainThread) {
  process.on('exit', () => {
    const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kib) writeFileSync(file, `${kib}\n`);
  });
}
