// What the scale profile measures with (escala.mjs): Redis's command counts, the machine's CPU,
// the batches' folders and the local reference.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, linkSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { ROOT } from '../procs.mjs';
import { CLI, run } from './settings.mjs';

/** SHA-256 of a file, streamed. */
export async function sha256Of(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/** A short-lived Redis client from the orchestrator (root namespace, through the bridge). */
export async function ask(host, port, fn) {
  const redis = new Redis({
    host,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** `INFO commandstats` as { command: calls }. */
export async function commandCalls(address) {
  const [host, port] = address.split(':');
  const info = await ask(host, Number(port), (redis) => redis.info('commandstats'));
  const calls = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]] = Number(m[2]);
  return calls;
}

/** The calls of several nodes, added. */
export async function commandCallsOf(addresses) {
  const total = {};
  for (const address of addresses) {
    for (const [command, calls] of Object.entries(await commandCalls(address))) total[command] = (total[command] ?? 0) + calls;
  }
  return total;
}

/** The machine's busy CPU time so far, in ms (every process's, ours and other people's): /proc/stat. */
export function machineBusyMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user).
  const [user, nice, system, , , irq, softirq, steal] = fields;
  const ticks = user + nice + system + irq + softirq + (steal ?? 0);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/** A `censo lote` folder of `count` hard links to one school return, in regional subfolders. */
export function linkedFolder(dataDir, source, count) {
  const dir = path.join(dataDir, `lote-${count}`);
  if (existsSync(dir)) return dir;
  for (let i = 0; i < count; i++) {
    const folder = path.join(dir, `regional-${i % Math.min(50, count)}`);
    mkdirSync(folder, { recursive: true });
    linkSync(source, path.join(folder, `escola-${i}.xlsx`));
  }
  return dir;
}

/** Runs `node cli/dist/main.js args` in the root namespace (no group): the local reference. */
export async function localLote(folder, out) {
  const started = Date.now();
  await run(process.execPath, [CLI, '--quiet', 'lote', folder, '-o', out], { cwd: ROOT, timeout: 600_000, maxBuffer: 1 << 20 });
  return { ms: Date.now() - started, sha256: await sha256Of(out) };
}
