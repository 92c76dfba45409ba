// The scale profile's settings (escala.mjs): its hosts and their addresses, ports, profiles.
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { network } from '../net.mjs';
import { ROOT } from '../procs.mjs';

export const PREFIX = 'cnse';
export const SUBNET = '10.231.43';
export const API_PORT = 3000;
export const WORKER_PORT = 9100;
export const PROXY_PORT = 8080;
/** Redis Cluster: two nodes on each Redis host (a master and another master's replica). */
export const CLUSTER_PORTS = [7000, 7001];
export const API_KEY = 'escala-key';
export const CLI = path.join(ROOT, 'cli/dist/main.js');
export const MAX_WORKERS = 16;
export const MAX_APIS = 3;
export const LOCK = path.join(os.tmpdir(), 'censo-escala.lock');

/** The addresses: APIs .11–.13, workers .21–.36, Redis .51–.53, the proxy .61, the client .71. */
export const ESCALA_HOSTS = {
  ...Object.fromEntries(Array.from({ length: MAX_APIS }, (_, i) => [`api${i + 1}`, 11 + i])),
  ...Object.fromEntries(Array.from({ length: MAX_WORKERS }, (_, i) => [`wk${i + 1}`, 21 + i])),
  rd1: 51,
  rd2: 52,
  rd3: 53,
  proxy: 61,
  load: 71,
};
export const net = network({ prefix: PREFIX, subnet: SUBNET, hosts: ESCALA_HOSTS });
export const REDIS_HOSTS = ['rd1', 'rd2', 'rd3'];

/**
 * Files per worker host are proportional to its quota (`filesPerCore` × cores), so every size's
 * batch takes about as long at a perfect scale: 70 files for a 0.1-core host in the long profile
 * (1,500 rows each, the trial's 150 halved to keep the whole profile near 10 minutes).
 */
export const PROFILES = {
  // In `npm test` (test/integration/escala.test.ts): two sizes, one run each, a small batch.
  short: {
    workers: { sizes: [size(1, 0.1), size(2, 0.1)], runs: 1 },
    filesPerCore: 250,
    warmupPerHost: 2,
    cluster: null,
    api: null,
    maxMs: 80_000,
  },
  // By hand, on a quiet machine: about 10 minutes.
  long: {
    workers: { sizes: [size(1, 0.1), size(2, 0.1), size(4, 0.1), size(8, 0.1), size(16, 0.05)], runs: 3 },
    filesPerCore: 700,
    warmupPerHost: 3,
    cluster: { sizes: [size(1, 0.1), size(4, 0.1)], runs: 1 },
    // The API costs some 3 ms of CPU a file to take the uploads in, 4–9 ms in all (the tasks'
    // records, its own polling of Redis, the combined CSV): one at 0.05 core takes some 17 files/s
    // in. 480 files are 10 requests of 50 (the client's group), 4 at a time (the most `censo`
    // takes on 2 cores), dealt round robin: 5 + 5 on two APIs, 4 + 3 + 3 on three. Four workers
    // of 0.25 core (some 50 files/s) do not limit.
    api: { counts: [1, 2, 3], apiCores: 0.05, workers: size(4, 0.25), files: 480, runs: 2, concurrency: 4 },
    maxMs: 12 * 60_000,
  },
};
export function size(hosts, cores) {
  return { hosts, cores };
}

export const log = (msg) => console.log(`[escala ${new Date().toISOString().slice(11, 19)}] ${msg}`);
export const run = promisify(execFile);

export class Usage extends Error {}
