// What runs on the suite's hosts: Redis (a master and two replicas, a sentinel beside each), the
// S3 server, two API replicas and three workers, started as an operator would start them
// (`start:api`, `start:worker`, redis-server, redis-server --sentinel), each in its namespace.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { ipOf } from './net.mjs';
import { ROOT, sleep, startIn, until } from './procs.mjs';
import { prepareNextRelease } from './release.mjs';

export const API_PORT = 3000;
export const WORKER_PORT = 9100;
export const REDIS_PORT = 6379;
export const SENTINEL_PORT = 26379;
export const S3_PORT = 4569;
export const REDIS_HOSTS = ['rd1', 'rd2', 'rd3'];
export const API_HOSTS = ['api1', 'api2'];
export const WORKER_HOSTS = ['wk1', 'wk2', 'wk3'];

/** The settings every service gets; the lock and stall settings bound recovery (CLUSTER.md). */
export function serviceSettings(profile) {
  return {
    API_KEY: 'cluster-key',
    QUEUE_PREFIX: '{censo}',
    // --shards (behind Sentinel every shard is on the one master: what it proves is the routing under faults).
    QUEUE_SHARDS: String(profile.shards ?? 1),
    REDIS_SENTINEL_NAME: 'censo',
    S3_BUCKET: 'censo-cluster',
    JOB_TIMEOUT_MS: String(profile.jobTimeoutMs),
    WORKER_LOCK_DURATION_MS: String(profile.lockMs),
    WORKER_STALLED_INTERVAL_MS: String(profile.stalledMs),
    WORKER_CONCURRENCY: '1',
    LOG_LEVEL: 'info',
  };
}

/**
 * How long a replaced process may take to leave after SIGTERM before it is killed: the API's
 * close and the worker's drain (JOB_TIMEOUT_MS capped at 20 s, then 5 s to hand jobs back) each
 * end within 30 s; a process still there 10 s later did not leave on its own.
 */
const UPGRADE_GRACE_MS = 40_000;

/** Sentinel: the master counts as down after this long without an answer. */
export const SENTINEL_DOWN_AFTER_MS = 2_000;
const SENTINEL_FAILOVER_TIMEOUT_MS = 6_000;

/**
 * A Redis server's arguments as the suite runs it: `bind`:`port`, its files in `dir`, a replica of
 * `replicaOf` (an address, on REDIS_PORT) or a master. Also the scale profile's (escala/bench.mjs),
 * whose Redis Cluster nodes add `cluster`: their state file and how long a node may be silent
 * before it counts as failing.
 */
export function redisServerArgs({ bind, port, dir, replicaOf = null, cluster = null }) {
  return [
    '--port',
    String(port),
    '--bind',
    bind,
    '--protected-mode',
    'no',
    '--dir',
    dir,
    // As BullMQ's production guide asks: AOF every second, never evict.
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
    // A master cut off from every replica stops taking writes a failover would lose (README).
    '--min-replicas-to-write',
    '1',
    '--min-replicas-max-lag',
    '10',
    ...(replicaOf ? ['--replicaof', replicaOf, String(REDIS_PORT)] : []),
    ...(cluster
      ? ['--cluster-enabled', 'yes', '--cluster-config-file', cluster.configFile, '--cluster-node-timeout', String(cluster.nodeTimeoutMs)]
      : []),
  ];
}

/** A sentinel's configuration file: on `bind`, watching `master` (an address) as `censo`, quorum 2. */
export function sentinelConfig({ bind, dir, master }) {
  return [
    `port ${SENTINEL_PORT}`,
    `bind ${bind}`,
    'protected-mode no',
    `dir ${dir}`,
    `sentinel monitor censo ${master} ${REDIS_PORT} 2`,
    `sentinel down-after-milliseconds censo ${SENTINEL_DOWN_AFTER_MS}`,
    `sentinel failover-timeout censo ${SENTINEL_FAILOVER_TIMEOUT_MS}`,
    'sentinel parallel-syncs censo 1',
    '',
  ].join('\n');
}

export async function startTopology(runDir, profile) {
  const logs = path.join(runDir, 'logs');
  await mkdir(logs, { recursive: true });
  const settings = serviceSettings(profile);
  const serviceEnv = {
    ...settings,
    REDIS_SENTINELS: REDIS_HOSTS.map((host) => `${ipOf(host)}:${SENTINEL_PORT}`).join(','),
    S3_ENDPOINT: `http://${ipOf('s3')}:${S3_PORT}`,
    S3_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    // Nothing but the suite's own addresses: no instance-metadata lookups.
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  const procs = {};
  const restarts = [];

  // --- Redis and Sentinel ----------------------------------------------------------------------
  const redisArgs = (host, replicaOf) =>
    redisServerArgs({ bind: ipOf(host), port: REDIS_PORT, dir: path.join(runDir, host), replicaOf: replicaOf ? ipOf(replicaOf) : null });
  const startRedis = (host, replicaOf) =>
    (procs[`redis-${host}`] = startIn(
      host,
      `redis-${host}`,
      'redis-server',
      redisArgs(host, replicaOf),
      {},
      path.join(logs, `redis-${host}.log`),
    ));
  for (const host of REDIS_HOSTS) {
    await mkdir(path.join(runDir, host), { recursive: true });
    startRedis(host, host === 'rd1' ? null : 'rd1');
  }
  for (const host of REDIS_HOSTS) {
    const conf = path.join(runDir, host, 'sentinel.conf');
    await writeFile(conf, sentinelConfig({ bind: ipOf(host), dir: path.join(runDir, host), master: ipOf('rd1') }));
    procs[`sentinel-${host}`] = startIn(
      host,
      `sentinel-${host}`,
      'redis-server',
      [conf, '--sentinel'],
      {},
      path.join(logs, `sentinel-${host}.log`),
    );
  }

  /** A short-lived client from the orchestrator (root namespace, through the bridge). */
  const ask = async (host, port, run) => {
    const redis = new Redis({
      host: ipOf(host),
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
      commandTimeout: 2_000,
    });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      return await run(redis);
    } finally {
      redis.disconnect();
    }
  };
  /** The host the sentinels name as master (the first sentinel that answers). */
  const currentMaster = async () => {
    for (const host of REDIS_HOSTS) {
      try {
        const [addr] = await ask(host, SENTINEL_PORT, (redis) => redis.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'censo'));
        return REDIS_HOSTS.find((h) => ipOf(h) === addr) ?? null;
      } catch {
        // ask the next sentinel
      }
    }
    return null;
  };
  const ready = await until(
    async () => {
      for (const host of REDIS_HOSTS) {
        const known = await ask(host, SENTINEL_PORT, async (redis) => ({
          replicas: (await redis.call('SENTINEL', 'REPLICAS', 'censo')).length,
          sentinels: (await redis.call('SENTINEL', 'SENTINELS', 'censo')).length,
        }));
        if (known.replicas < 2 || known.sentinels < 2) return false;
      }
      return true;
    },
    { timeoutMs: 60_000, everyMs: 500 },
  );
  if (!ready) throw new Error('the sentinels did not find the replicas and each other within 60 s');

  // --- The bucket ------------------------------------------------------------------------------
  await mkdir(path.join(runDir, 's3'), { recursive: true });
  procs.s3 = startIn(
    's3',
    's3',
    process.execPath,
    [path.join(ROOT, 'cluster/s3-server.mjs'), ipOf('s3'), String(S3_PORT), path.join(runDir, 's3'), settings.S3_BUCKET],
    {},
    path.join(logs, 's3.log'),
  );

  // --- Services --------------------------------------------------------------------------------
  // Each host runs this build until a rolling upgrade replaces it with the next one.
  const next = await prepareNextRelease(path.join(runDir, 'next'));
  const releaseOf = {};
  const codeOf = (host) => releaseOf[host] ?? ROOT;
  const startApi = (host) =>
    (procs[host] = startIn(
      host,
      host,
      process.execPath,
      [path.join(codeOf(host), 'services/api/dist/main.js'), '--role=api'],
      { ...serviceEnv, HOST: ipOf(host), PORT: String(API_PORT), UPLOAD_DIR: path.join(runDir, host, 'uploads') },
      path.join(logs, `${host}.log`),
    ));
  const startWorker = (host) =>
    (procs[host] = startIn(
      host,
      host,
      process.execPath,
      [path.join(codeOf(host), 'services/worker/dist/main.js')],
      { ...serviceEnv, HOST: ipOf(host), PORT: String(WORKER_PORT), UPLOAD_DIR: path.join(runDir, host, 'scratch') },
      path.join(logs, `${host}.log`),
    ));
  for (const host of [...API_HOSTS, ...WORKER_HOSTS]) await mkdir(path.join(runDir, host), { recursive: true });
  for (const host of WORKER_HOSTS) startWorker(host);
  for (const host of API_HOSTS) startApi(host);

  const readyz = (host) => `http://${ipOf(host)}:${API_HOSTS.includes(host) ? API_PORT : WORKER_PORT}/readyz`;
  const answersReady = async (host) => (await fetch(readyz(host), { signal: AbortSignal.timeout(3_000) })).status === 200;
  const waitReady = async (hosts, timeoutMs = 90_000) => {
    for (const host of hosts) {
      if (!(await until(() => answersReady(host), { timeoutMs, everyMs: 500 })))
        throw new Error(`${host} not ready within ${timeoutMs} ms`);
    }
  };
  await waitReady([...WORKER_HOSTS, ...API_HOSTS]);

  /** Replaces `host`'s process by the release at `root` (this build or the next). */
  const replace = async (host, root) => {
    const old = procs[host];
    const step = { host, stoppedAt: Date.now() };
    await old.stop(UPGRADE_GRACE_MS);
    step.exitedAt = Date.now();
    // 0 when it left on its own; SIGKILL when it was still there after the grace.
    step.exit = await old.exited;
    releaseOf[host] = root;
    (API_HOSTS.includes(host) ? startApi : startWorker)(host);
    await waitReady([host]);
    step.readyAt = Date.now();
    restarts.push({ host, at: step.exitedAt });
    return step;
  };

  return {
    settings,
    serviceEnv,
    procs,
    restarts,
    apiUrls: API_HOSTS.map((host) => `http://${ipOf(host)}:${API_PORT}`),
    currentMaster,
    ask,
    waitReady,
    answersReady,
    async restartApi(host) {
      await procs[host].kill();
      startApi(host);
      restarts.push({ host, at: Date.now() });
    },
    async restartWorker(host) {
      await procs[host].kill();
      startWorker(host);
      restarts.push({ host, at: Date.now() });
    },
    /** The contract versions of this build and of the next one. */
    contract: { from: next.from, to: next.to },
    /**
     * One step of a rolling upgrade, as an operator (or an orchestrator) takes it: SIGTERM, wait
     * for the process to leave, start the next version in its place, wait until it is ready.
     */
    upgrade: (host) => replace(host, next.root),
    /** One step of the rollback: the same, back to this build. */
    downgrade: (host) => replace(host, ROOT),
    /** Back as a replica of whichever master the sentinels name now, as an operator restarts it. */
    async restartRedis(host) {
      const master = await currentMaster();
      startRedis(host, master && master !== host ? master : null);
      await sleep(100);
    },
  };
}
