#!/usr/bin/env node
// `npm run cluster`: the service as a secretariat deploys it (two API replicas, three workers,
// Redis with Sentinel, an S3 bucket, each on its own "host", a network namespace) under a
// seeded schedule of faults, with a history of every request and fault and a checker over it.
// Writes CLUSTER.md. Needs root (ip netns) and redis-server; traffic stays on the suite's own
// private /24 and loopback.
//   node cluster/run.mjs [--profile long|short] [--seed N] [--out DIR] [--report FILE] [--shards N]
//   node cluster/run.mjs --cleanup      removes what an interrupted run left behind
//   node cluster/run.mjs escala [...]   the scale profile instead (cluster/escala.mjs)
// Exit code: 0 when every check held, 1 when one did not (or the run broke), 2 for usage.
import { existsSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Queue } from 'bullmq';
import { closeRedisClient, createLogger, createRedisClient, loadConfig, shardPrefixes } from '@censo/shared';
import { startServer } from '@censo/api';
import { generate } from '../bench/gen-big.mjs';
import { multipartBody, MULTIPART_TYPE } from '../bench/http.mjs';
import { check } from './check.mjs';
import { planFaults, runFault } from './faults.mjs';
import { BRIDGE_IP, createNetwork, ipOf, removeLeftovers } from './net.mjs';
import { ROOT, killAll, sleep, startIn, until } from './procs.mjs';
import { measureSizing } from './sizing.mjs';
import { writeReport } from './report.mjs';
import { API_HOSTS, WORKER_HOSTS, startTopology } from './topology.mjs';

export const PROFILES = {
  // In `npm test`: every fault once, short gaps, small files, no sizing; about 2 minutes (the
  // whole suite must stay under 12 minutes on 2 cores).
  short: {
    persons: [200, 2_000],
    clients: 4,
    baselineMs: 8_000,
    gapMs: 3_000,
    gapJitterMs: 1_500,
    tailMs: 18_000,
    masterDownMs: 6_000,
    redisDownMs: 15_000,
    bucketDownMs: 6_000,
    lockMs: 5_000,
    stalledMs: 5_000,
    jobTimeoutMs: 30_000,
    sizing: false,
  },
  // By hand: larger files, longer gaps and tail, and the sizing measurements.
  long: {
    persons: [200, 2_000, 20_000],
    clients: 6,
    baselineMs: 40_000,
    gapMs: 20_000,
    gapJitterMs: 10_000,
    tailMs: 60_000,
    masterDownMs: 15_000,
    redisDownMs: 30_000,
    bucketDownMs: 20_000,
    lockMs: 5_000,
    stalledMs: 5_000,
    jobTimeoutMs: 30_000,
    sizing: true,
  },
};

const LOCK = path.join(os.tmpdir(), 'censo-cluster.lock');
// `npm run cluster -- escala [options]`: the scale profile (escala.mjs), not the fault suite.
if (process.argv[2] === 'escala') {
  const { main } = await import('./escala.mjs');
  process.exit(await main(process.argv.slice(3)));
}
const { values: args } = parseArgs({
  options: {
    profile: { type: 'string', default: 'long' },
    seed: { type: 'string', default: '22' },
    out: { type: 'string' },
    report: { type: 'string', default: path.join(ROOT, 'CLUSTER.md') },
    cleanup: { type: 'boolean', default: false },
    // QUEUE_SHARDS for every service (issue 55): the same faults with the jobs over N queues.
    shards: { type: 'string', default: '1' },
  },
});
const log = (msg) => console.log(`[cluster ${new Date().toISOString().slice(11, 19)}] ${msg}`);

function fail(message, code = 2) {
  console.error(`cluster: ${message}`);
  process.exit(code);
}

if (process.getuid?.() !== 0) fail('needs root (it creates network namespaces with ip netns)');
if (args.cleanup) {
  const removed = removeLeftovers();
  log(`removed ${removed.namespaces} namespaces and ${removed.links} links`);
  process.exit(0);
}
if (!PROFILES[args.profile]) fail(`--profile must be one of ${Object.keys(PROFILES).join(', ')}`);
const shards = Number(args.shards);
if (!Number.isInteger(shards) || shards < 1 || shards > 8) fail('--shards must be 1 to 8');
const profile = { ...PROFILES[args.profile], shards };
const seed = Number(args.seed);
if (!Number.isInteger(seed)) fail('--seed must be a whole number');

// One run at a time: the network names and addresses are fixed.
if (existsSync(LOCK)) {
  const owner = Number(readFileSync(LOCK, 'utf8'));
  let alive = false;
  try {
    process.kill(owner, 0);
    alive = owner !== process.pid;
  } catch {
    // its owner is gone: a leftover
  }
  if (alive) fail(`another run (pid ${owner}) holds ${LOCK}`);
}
writeFileSync(LOCK, String(process.pid));

const runDir = args.out ? path.resolve(args.out) : path.join(os.tmpdir(), `censo-cluster-${Date.now()}`);
let tornDown = false;
async function teardown() {
  if (tornDown) return;
  tornDown = true;
  await killAll().catch(() => undefined);
  removeLeftovers();
  try {
    unlinkSync(LOCK);
  } catch {
    // already gone
  }
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: tearing down`);
    void teardown().then(() => process.exit(1));
  });
}

/** The files the load sends: fixtures and generated returns of a few school sizes. */
async function prepareUploads() {
  const fixtures = path.join(ROOT, 'test/fixtures/basico');
  const parts = (dir, format, withTxt) => [
    { field: 'retorno', path: path.join(dir, `retorno.${format}`), filename: `retorno.${format}` },
    ...(withTxt ? [{ field: 'txt', path: path.join(dir, 'censo.txt'), filename: 'censo.txt' }] : []),
  ];
  const uploads = [
    { name: 'basico divergencias-rf .json', route: '/api/divergencias-rf', parts: parts(fixtures, 'json', false), weight: 3, persons: 5 },
    { name: 'basico retorno-rf .xlsx', route: '/api/retorno-rf', parts: parts(fixtures, 'xlsx', true), weight: 2, persons: 5 },
    { name: 'basico censo-corrigido .json', route: '/api/censo-corrigido', parts: parts(fixtures, 'json', true), weight: 2, persons: 5 },
  ];
  for (const persons of profile.persons) {
    const dir = path.join(runDir, 'data', `p${persons}`);
    const formats = persons <= 2_000 ? ['txt', 'json', 'xlsx'] : ['txt', 'json'];
    await generate({ persons, out: dir, formats });
    // Larger files are rarer, as large schools are.
    const weight = persons <= 200 ? 3 : persons <= 2_000 ? 2 : 1;
    uploads.push(
      { name: `p${persons} divergencias-rf .json`, route: '/api/divergencias-rf', parts: parts(dir, 'json', false), weight, persons },
      { name: `p${persons} retorno-rf .json`, route: '/api/retorno-rf', parts: parts(dir, 'json', true), weight, persons },
    );
    if (formats.includes('xlsx')) {
      uploads.push({
        name: `p${persons} censo-corrigido .xlsx`,
        route: '/api/censo-corrigido',
        parts: parts(dir, 'xlsx', true),
        weight,
        persons,
      });
    }
  }
  for (const upload of uploads) {
    upload.bytes = upload.parts.reduce((n, part) => n + readFileSync(part.path).length, 0);
  }
  return uploads;
}

/** The embedded mode's answer to each upload: what every 200 of the run must equal, byte for byte. */
async function referenceAnswers(uploads) {
  const config = loadConfig({
    API_KEY: 'ref',
    HOST: '127.0.0.1',
    PORT: '0',
    UPLOAD_DIR: path.join(runDir, 'reference'),
    LOG_LEVEL: 'silent',
    WORKER_CONCURRENCY: '1',
  });
  const server = await startServer(config, 'all', createLogger(config, {}));
  try {
    const expected = new Map();
    for (const upload of uploads) {
      const body = multipartBody(upload.parts.map((part) => ({ ...part, content: readFileSync(part.path) })));
      const response = await fetch(`${server.url}${upload.route}`, {
        method: 'POST',
        headers: { 'content-type': MULTIPART_TYPE, 'x-api-key': 'ref' },
        body,
        signal: AbortSignal.timeout(120_000),
      });
      const bytes = Buffer.from(await response.arrayBuffer());
      if (response.status !== 200) throw new Error(`the embedded mode answered ${response.status} to ${upload.name}`);
      expected.set(upload.name, { status: 200, sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length });
    }
    return expected;
  } finally {
    await server.close();
  }
}

function jsonLines(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        return null;
      }
    })
    .filter(Boolean);
}

/** What the run left: the queue's state, keys outside it, objects in the bucket, files in folders. */
async function endState(topology, faults) {
  const config = loadConfig({ ...topology.serviceEnv });
  const redis = createRedisClient(config.redis, 'fail-fast', { enableOfflineQueue: true, commandTimeout: 10_000 });
  redis.on('error', () => undefined);
  // The synchronous requests' queue and the tasks' (SPEC §7.5): the load sends requests, and the
  // rolling restart's rollback one batch; a job of either left unfinished is a defect.
  const QUEUES = ['censo-jobs', 'censo-tarefas'];
  // Every shard's (--shards): shard 0's prefix is QUEUE_PREFIX, the others' carry their number.
  const prefixes = shardPrefixes(config.queuePrefix, config.queueShards);
  const queues = prefixes.flatMap((prefix) => QUEUES.map((name) => new Queue(name, { connection: redis, prefix })));
  const STATES = ['wait', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'];
  const counts = async () => {
    const all = await Promise.all(queues.map((queue) => queue.getJobCounts(...STATES)));
    return Object.fromEntries(STATES.map((state) => [state, all.reduce((sum, c) => sum + (c[state] ?? 0), 0)]));
  };
  try {
    // Jobs of requests cut by an API kill are still run (their files are there); let them end.
    await until(
      async () => {
        const c = await counts();
        return c.wait + c.active + c.delayed + c.prioritized + c['waiting-children'] === 0;
      },
      { timeoutMs: 90_000, everyMs: 1_000 },
    );
    await sleep(3_000); // the last requests' deletions
    const queueCounts = await counts();
    // How many times each kept job was started: more than once is a duplicate execution.
    const attempts = [];
    for (const prefix of prefixes) {
      for (const name of QUEUES) {
        for (const state of ['completed', 'failed']) {
          for (const id of await redis.zrange(`${prefix}:${name}:${state}`, 0, -1)) {
            attempts.push(Number((await redis.hget(`${prefix}:${name}:${id}`, 'ats')) ?? 1));
          }
        }
      }
    }
    const strayKeys = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
      cursor = next;
      const queueKey = (key) => prefixes.some((prefix) => QUEUES.some((name) => key.startsWith(`${prefix}:${name}:`)));
      for (const key of keys.filter((key) => !queueKey(key))) {
        // The rolling restart's rollback sends one batch (faults.mjs) and deletes it: what its
        // owner keeps beside it (a rate window, say) expires by itself; a record without a TTL is stray.
        if (key.startsWith(`${config.queuePrefix}:tarefas:`) && (await redis.pttl(key)) > 0) continue;
        // An API's ends stream (addressed.ts), one a shard: a killed API leaves it, and it goes within an hour by itself.
        if (prefixes.some((prefix) => key.startsWith(`${prefix}:fim:`)) && (await redis.pttl(key)) > 0) continue;
        strayKeys.push(key);
      }
    } while (cursor !== '0');

    const s3 = new S3Client({
      endpoint: topology.serviceEnv.S3_ENDPOINT,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const areas = new Set();
    let token;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: topology.settings.S3_BUCKET, ContinuationToken: token }));
      for (const item of page.Contents ?? []) areas.add(item.Key.split('/')[0]);
      token = page.NextContinuationToken;
    } while (token);
    s3.destroy();

    const folders = {};
    for (const host of API_HOSTS) folders[host] = await readdir(path.join(runDir, host, 'uploads')).catch(() => []);
    for (const host of WORKER_HOSTS) folders[host] = await readdir(path.join(runDir, host, 'scratch')).catch(() => []);
    const killedWorkers = {};
    for (const f of faults.filter((f) => f.name === 'worker-killed')) killedWorkers[f.target] = (killedWorkers[f.target] ?? 0) + 1;
    return { queue: queueCounts, attempts, strayKeys, bucketAreas: [...areas], folders, killedWorkers };
  } finally {
    await Promise.all(queues.map((queue) => queue.close().catch(() => undefined)));
    await closeRedisClient(redis);
  }
}

let exitCode = 1;
try {
  const started = Date.now();
  const removed = removeLeftovers();
  if (removed.namespaces + removed.links > 0) log(`removed a previous run's ${removed.namespaces} namespaces and ${removed.links} links`);
  rmSync(runDir, { recursive: true, force: true });
  await mkdir(runDir, { recursive: true });
  log(`profile ${args.profile}, seed ${seed}, run folder ${runDir}`);

  const uploads = await prepareUploads();
  const expected = await referenceAnswers(uploads);
  log(`reference answers of ${uploads.length} uploads from the embedded mode`);

  createNetwork();
  log(`network: bridge ${BRIDGE_IP}/24, one namespace per host`);
  const topology = await startTopology(runDir, profile);
  log(`topology ready: master ${await topology.currentMaster()}`);

  const sizing = profile.sizing ? await measureSizing(topology, uploads, runDir, log) : null;

  const requestsFile = path.join(runDir, 'requests.jsonl');
  const loadConfigFile = path.join(runDir, 'load.json');
  await writeFile(
    loadConfigFile,
    JSON.stringify({
      apis: topology.apiUrls,
      uploads,
      clients: profile.clients,
      seed,
      out: requestsFile,
      apiKey: topology.settings.API_KEY,
      requestTimeoutMs: profile.jobTimeoutMs + 30_000,
      maxAttempts: 3,
      maxMs: 30 * 60_000,
      thinkMs: 200,
    }),
  );
  const load = startIn(
    'load',
    'load',
    process.execPath,
    [path.join(ROOT, 'cluster/load.mjs'), loadConfigFile],
    {},
    path.join(runDir, 'logs', 'load.log'),
  );
  log(`load: ${profile.clients} clients through ${topology.apiUrls.join(' and ')}`);
  await sleep(profile.baselineMs);

  const plan = planFaults(seed, profile);
  const faults = [];
  for (const fault of plan) {
    const record = await runFault(fault, topology, log);
    if (record.name === 'api-killed') record.targetIp = ipOf(record.target);
    faults.push(record);
    await sleep(fault.gapMs);
  }
  log(`last heal; ${profile.tailMs} ms of load after it`);
  await sleep(profile.tailMs);
  load.signal('SIGTERM');
  if (!(await until(async () => !load.running, { timeoutMs: profile.jobTimeoutMs + 40_000 }))) await load.kill();

  const state = await endState(topology, faults);
  const requests = jsonLines(requestsFile);
  const jobsDone = {};
  // Each worker process's contract version (its pid's 'worker started'), and how many of them
  // gave back a job of a newer contract (logged once per process).
  const workers = { versions: {}, handBacks: 0 };
  for (const host of WORKER_HOSTS) {
    const lines = jsonLines(path.join(runDir, 'logs', `${host}.log`));
    for (const line of lines.filter((l) => l.msg === 'worker started')) workers.versions[line.pid] = line.contract ?? null;
    workers.handBacks += lines.filter((l) => l.msg === 'job of a newer contract left for a newer worker').length;
    jobsDone[host] = lines
      .filter((line) => line.msg === 'job done')
      .map((line) => ({ jobId: line.jobId, time: Date.parse(line.time), ms: line.ms, pid: line.pid, contract: line.contract ?? null }));
  }
  const apiLines = API_HOSTS.flatMap((host) => jsonLines(path.join(runDir, 'logs', `${host}.log`)));
  const completedAreas = new Set(apiLines.filter((line) => line.msg === 'request completed' && line.jobId).map((line) => line.jobId));
  // Every request an API received, by its id (the load's x-request-id `<upload>.<attempt>`).
  const receivedRequests = new Set(apiLines.filter((line) => line.msg === 'request completed').map((line) => line.reqId));
  const unremovedAreas = new Set(apiLines.filter((line) => line.msg === 'could not remove upload files').map((line) => line.uploadId));
  const verdict = check({
    requests,
    faults,
    expected,
    jobsDone,
    completedAreas,
    unremovedAreas,
    receivedRequests,
    workers,
    endState: state,
    settings: { lockMs: profile.lockMs, stalledMs: profile.stalledMs, jobTimeoutMs: profile.jobTimeoutMs },
  });

  const history = [...requests, ...faults].sort((a, b) => a.start - b.start);
  await writeFile(path.join(runDir, 'history.jsonl'), history.map((line) => JSON.stringify(line)).join('\n') + '\n');
  await writeFile(path.join(runDir, 'verdict.json'), JSON.stringify(verdict, null, 2));
  await writeReport(args.report, {
    profile: args.profile,
    settingsOfProfile: profile,
    seed,
    topology,
    uploads,
    plan,
    faults,
    verdict,
    sizing,
    state,
    started,
    runDir,
  });
  for (const c of verdict.checks) log(`${c.ok ? 'held' : 'FAILED'}: ${c.name} (${c.detail})`);
  log(`history ${path.join(runDir, 'history.jsonl')}; report ${args.report}`);
  exitCode = verdict.ok ? 0 : 1;
} catch (err) {
  console.error(`cluster: the run broke: ${err instanceof Error ? err.stack : String(err)}`);
} finally {
  await teardown();
}
// The run folder stays for inspection: history, verdict, logs and the generated data.
process.exit(exitCode);
