// The machine the run is on: CPU, memory, load, Node, and whether Redis and PostgreSQL answer
// (a section whose server is not there is skipped and says so).
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { redisAvailable } from '../http.mjs';
import { versionOf } from '../lib.mjs';
import { postgresAvailable } from '../query.mjs';

/** Printed first; `machine` heads BENCHMARKS.md. */
export async function machineSection({ log, quick, RUNS, redisUrl, databaseUrl }) {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model;
  const [redisVersion, pgVersion] = await Promise.all([redisAvailable(redisUrl), postgresAvailable(databaseUrl)]);
  const machine = [
    `- Date: ${new Date().toISOString()} (${quick ? 'quick run: 2 runs per case' : `full run: ${RUNS} runs per case`}, medians)`,
    `- CPU: ${cpu}, ${os.availableParallelism()} cores; RAM ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB; ${os.type()} ${os.release()}`,
    `- Load average when the run started: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')} (1, 5, 15 min; ${os.availableParallelism()} cores); other work on the machine moves every absolute figure`,
    `- Node ${process.version}; Redis ${redisVersion ?? 'not reachable'}; PostgreSQL ${pgVersion ?? 'not reachable'}`,
    `- Packages: ${['fastify', '@fastify/multipart', 'bullmq', 'ioredis', 'piscina', 'yauzl', 'pg', 'exceljs', 'autocannon'].map((p) => `${p} ${versionOf(p)}`).join(', ')}`,
  ].join('\n');
  log(`# censo-api benchmarks\n\n${machine}`);
  return { machine, redisVersion, pgVersion };
}
