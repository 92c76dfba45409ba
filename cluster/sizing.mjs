// Measured costs for the sizing section, on the healthy topology before the load starts: CPU per
// job by file size (workers and API, from /proc), a worker thread's job time, and what a waiting
// and a finished job cost in Redis memory.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { median } from '../bench/lib.mjs';
import { multipartBody, MULTIPART_TYPE } from '../bench/http.mjs';
import { cpuSeconds, until } from './procs.mjs';
import { REDIS_PORT, WORKER_HOSTS } from './topology.mjs';

const RUNS_PER_CLASS = 5;
const WAITING_JOBS = 40;

function send(api, upload, apiKey) {
  const body = multipartBody(upload.parts.map((part) => ({ ...part, content: readFileSync(part.path) })));
  return fetch(`${api}${upload.route}`, {
    method: 'POST',
    headers: { 'content-type': MULTIPART_TYPE, 'x-api-key': apiKey },
    body,
    signal: AbortSignal.timeout(120_000),
  }).then(async (response) => {
    await response.arrayBuffer();
    return response.status;
  });
}

function jobTimes(runDir, from, to) {
  const ms = [];
  for (const host of WORKER_HOSTS) {
    for (const line of readFileSync(path.join(runDir, 'logs', `${host}.log`), 'utf8').split('\n')) {
      if (!line.includes('"job done"')) continue;
      const entry = JSON.parse(line);
      const time = Date.parse(entry.time);
      if (time >= from && time <= to) ms.push(entry.ms);
    }
  }
  return ms;
}

export async function measureSizing(topology, uploads, runDir, log) {
  const api = topology.apiUrls[0];
  const apiKey = topology.settings.API_KEY;
  const workerCpu = async () =>
    (await Promise.all(WORKER_HOSTS.map((host) => cpuSeconds(topology.procs[host].pid)))).reduce((a, b) => a + b, 0);
  const apiCpu = () => cpuSeconds(topology.procs.api1.pid);

  const classes = [];
  for (const upload of uploads.filter((u) => u.name.endsWith('.json') && u.name !== 'basico censo-corrigido .json')) {
    if ((await send(api, upload, apiKey)) !== 200) throw new Error(`sizing: ${upload.name} did not succeed`);
    const [w0, a0, t0] = [await workerCpu(), await apiCpu(), Date.now()];
    const latencies = [];
    for (let i = 0; i < RUNS_PER_CLASS; i++) {
      const start = Date.now();
      if ((await send(api, upload, apiKey)) !== 200) throw new Error(`sizing: ${upload.name} did not succeed`);
      latencies.push(Date.now() - start);
    }
    const [w1, a1, t1] = [await workerCpu(), await apiCpu(), Date.now()];
    const jobMs = median(jobTimes(runDir, t0, t1 + 1_000));
    classes.push({
      name: upload.name,
      persons: upload.persons,
      bytes: upload.bytes,
      workerCpuMs: ((w1 - w0) / RUNS_PER_CLASS) * 1000,
      apiCpuMs: ((a1 - a0) / RUNS_PER_CLASS) * 1000,
      jobMs,
      latencyMs: median(latencies),
    });
    log(`sizing: ${upload.name}: ${Math.round(classes.at(-1).workerCpuMs)} ms worker CPU per job`);
  }

  // Redis memory per waiting job: workers stopped, a burst of uploads waits in the queue.
  const master = await topology.currentMaster();
  const used = () => topology.ask(master, REDIS_PORT, async (redis) => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]));
  const waiting = () => topology.ask(master, REDIS_PORT, (redis) => redis.llen('{censo}:censo-jobs:wait'));
  for (const host of WORKER_HOSTS) topology.procs[host].signal('SIGSTOP');
  let waitingJobBytes = NaN;
  let finishedJobBytes;
  const small = uploads.find((u) => u.name === 'basico divergencias-rf .json');
  try {
    const before = await used();
    const burst = Array.from({ length: WAITING_JOBS }, () => send(api, small, apiKey).catch(() => 0));
    if (await until(async () => (await waiting()) >= WAITING_JOBS, { timeoutMs: 30_000 })) {
      waitingJobBytes = ((await used()) - before) / WAITING_JOBS;
    }
    for (const host of WORKER_HOSTS) topology.procs[host].signal('SIGCONT');
    await Promise.all(burst);
    finishedJobBytes = await topology.ask(master, REDIS_PORT, async (redis) => {
      const [id] = await redis.zrange('{censo}:censo-jobs:completed', -1, -1);
      return id ? Number(await redis.call('MEMORY', 'USAGE', `{censo}:censo-jobs:${id}`)) : NaN;
    });
  } finally {
    for (const host of WORKER_HOSTS) topology.procs[host].signal('SIGCONT');
  }
  log(`sizing: ${Math.round(waitingJobBytes)} bytes of Redis memory per waiting job, ${finishedJobBytes} per finished one`);
  return { classes, waitingJobBytes, finishedJobBytes, runsPerClass: RUNS_PER_CLASS, waitingJobs: WAITING_JOBS };
}
