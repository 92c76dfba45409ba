// Highly available Redis topologies of a test's own, from the `redis-server` binary on loopback
// (SPEC §9): 1 master + 2 replicas watched by 3 sentinels, or a Redis Cluster of 3 masters with
// a replica each. Every server runs in a temporary folder; stop() kills them all and removes it,
// also when the start failed half-way. The shared 6379 server is never touched.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis, type RedisOptions } from 'ioredis';
import { waitFor } from './wait-for.js';
import { onThisMachine } from './deadline.js';

const HOST = '127.0.0.1';
/** The master group name the sentinels monitor. */
export const SENTINEL_MASTER_NAME = 'censo-ha';

interface Server {
  readonly port: number;
  readonly child: ChildProcess;
}

/** What both topologies offer a test. */
interface Topology {
  readonly dir: string;
  /** SIGKILLs every server still running and removes the folder. Safe to call twice. */
  stop(): Promise<void>;
}

export interface SentinelTopology extends Topology {
  /** REDIS_SENTINELS / REDIS_SENTINEL_NAME for the services. */
  readonly env: { REDIS_SENTINELS: string; REDIS_SENTINEL_NAME: string };
  /** Port of the master the sentinels currently name. */
  masterPort(): Promise<number>;
  /** SIGKILLs the current master; resolves with its port once it has exited. */
  killMaster(): Promise<number>;
}

export interface ClusterTopology extends Topology {
  /** REDIS_CLUSTER_NODES for the services. */
  readonly env: { REDIS_CLUSTER_NODES: string };
  /** Port of the master that serves the slot of `key` (or of its hash tag). */
  masterPortOf(key: string): Promise<number>;
  /** SIGKILLs the server on `port`; resolves once it has exited. */
  kill(port: number): Promise<void>;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/**
 * `count` ports, each free together with port + 10000 (a cluster node's bus port), from a
 * random start in a range the kernel does not hand out as ephemeral ports.
 */
async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  let port = 20_000 + Math.floor(Math.random() * 20_000);
  for (let tries = 0; ports.length < count && tries < 2_000; tries++, port++) {
    if ((await isFree(port)) && (await isFree(port + 10_000))) ports.push(port);
  }
  if (ports.length < count) throw new Error('no free loopback ports for the Redis topology');
  return ports;
}

/** A short-lived client that never retries (the topology's own checks); `options` add a user, say. */
export async function ask<T>(port: number, run: (redis: Redis) => Promise<T>, options: RedisOptions = {}): Promise<T> {
  const redis = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    ...options,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await run(redis);
  } finally {
    redis.disconnect();
  }
}

const answers = (port: number) => ask(port, async (redis) => (await redis.ping()) === 'PONG').catch(() => false);

class Servers {
  readonly #servers: Server[] = [];

  start(port: number, args: readonly string[]): Server {
    const child = spawn('redis-server', [...args], { stdio: 'ignore' });
    const server = { port, child };
    this.#servers.push(server);
    return server;
  }

  find(port: number): Server {
    const server = this.#servers.find((s) => s.port === port);
    if (!server) throw new Error(`no server of this topology on port ${port}`);
    return server;
  }

  async kill(port: number): Promise<void> {
    await killChild(this.find(port).child);
  }

  async killAll(): Promise<void> {
    await Promise.all(this.#servers.map((s) => killChild(s.child)));
  }
}

async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/** Starts the topology with `build`; on any failure, what was started is stopped before rethrowing. */
async function withCleanup<T extends Topology>(
  prefix: string,
  build: (dir: string, servers: Servers) => Promise<Omit<T, 'dir' | 'stop'>>,
): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const servers = new Servers();
  let stopped: Promise<void> | null = null;
  const stop = () =>
    (stopped ??= (async () => {
      await servers.killAll();
      await rm(dir, { recursive: true, force: true });
    })());
  try {
    const topology = await build(dir, servers);
    return { ...topology, dir, stop } as T;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Data servers keep nothing on disk: a killed master's data survives only on its replicas. */
const dataServerArgs = (port: number, dir: string) => [
  '--port',
  String(port),
  '--bind',
  HOST,
  '--dir',
  dir,
  '--save',
  '',
  '--appendonly',
  'no',
];

export function startSentinelTopology(): Promise<SentinelTopology> {
  return withCleanup<SentinelTopology>('censo-sentinel-', async (dir, servers) => {
    const [master, replica1, replica2, ...sentinelPorts] = await freePorts(6);
    for (const port of [master!, replica1!, replica2!]) {
      const home = path.join(dir, `redis-${port}`);
      await mkdir(home);
      const replicaOf = port === master ? [] : ['--replicaof', HOST, String(master)];
      servers.start(port, [...dataServerArgs(port, home), ...replicaOf]);
    }
    for (const port of sentinelPorts) {
      // Sentinel rewrites its own configuration file: each needs a writable one.
      const conf = path.join(dir, `sentinel-${port}.conf`);
      await writeFile(
        conf,
        [
          `port ${port}`,
          `bind ${HOST}`,
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER_NAME} ${HOST} ${master} 2`,
          // Fast enough for a test: the master counts as down after 2 s without an answer. Not
          // 1 s, a sentinel's ping period: on a busy machine a sentinel that had just switched
          // to the promoted replica sometimes counted it down 1 s later, before its first ping
          // was answered, logged +sdown and +odown (quorum 3/2) in the same millisecond, and a
          // second failover threw away the jobs the first new master had taken: 503s and 504s
          // after the recovery, about 1 run in 10 with two busy loops beside the test.
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 2000`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 4000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 2`,
          '',
        ].join('\n'),
      );
      servers.start(port, [conf, '--sentinel']);
    }

    const count = (port: number, what: 'REPLICAS' | 'SENTINELS') =>
      ask(port, async (redis) => ((await redis.call('SENTINEL', what, SENTINEL_MASTER_NAME)) as unknown[]).length).catch(() => 0);
    await waitFor(async () => (await Promise.all([master!, replica1!, replica2!].map(answers))).every(Boolean), {
      timeoutMs: onThisMachine(10_000),
      what: 'the Redis servers',
    });
    await waitFor(
      async () =>
        (await Promise.all([replica1!, replica2!].map((port) => ask(port, (redis) => redis.info('replication')).catch(() => '')))).every(
          (info) => info.includes('master_link_status:up'),
        ),
      { timeoutMs: onThisMachine(10_000), what: 'the replicas to be in sync' },
    );
    // Every sentinel must know both replicas and the two other sentinels before a failover can
    // be agreed on (they find each other through hello messages every 2 s).
    await waitFor(
      async () => {
        for (const port of sentinelPorts) {
          if ((await count(port, 'REPLICAS')) < 2 || (await count(port, 'SENTINELS')) < 2) return false;
        }
        return true;
      },
      { timeoutMs: onThisMachine(20_000), intervalMs: 200, what: 'the sentinels to discover each other' },
    );

    const masterPort = async (): Promise<number> => {
      for (const port of sentinelPorts) {
        try {
          const addr = (await ask(port, (redis) => redis.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME))) as [
            string,
            string,
          ];
          return Number(addr[1]);
        } catch {
          // that sentinel is not answering: ask the next
        }
      }
      throw new Error('no sentinel answers');
    };
    return {
      env: { REDIS_SENTINELS: sentinelPorts.map((port) => `${HOST}:${port}`).join(','), REDIS_SENTINEL_NAME: SENTINEL_MASTER_NAME },
      masterPort,
      async killMaster() {
        const port = await masterPort();
        await servers.kill(port);
        return port;
      },
    };
  });
}

export function startClusterTopology(): Promise<ClusterTopology> {
  return withCleanup<ClusterTopology>('censo-cluster-', async (dir, servers) => {
    const ports = await freePorts(6);
    for (const port of ports) {
      const home = path.join(dir, `node-${port}`);
      await mkdir(home);
      servers.start(port, [
        ...dataServerArgs(port, home),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(home, 'nodes.conf'),
        // A master unreachable for 2 s is failed over to its replica.
        '--cluster-node-timeout',
        '2000',
      ]);
    }
    await waitFor(async () => (await Promise.all(ports.map(answers))).every(Boolean), {
      timeoutMs: onThisMachine(10_000),
      what: 'the cluster nodes',
    });
    await promisify(execFile)(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((port) => `${HOST}:${port}`), '--cluster-replicas', '1', '--cluster-yes'],
      { timeout: onThisMachine(30_000) },
    );
    const clusterOk = (port: number) =>
      ask(port, (redis) => redis.call('CLUSTER', 'INFO')).then((info) => String(info).includes('cluster_state:ok'));
    const replicasInSync = async () => {
      for (const port of ports) {
        const info = await ask(port, (redis) => redis.info('replication'));
        if (info.includes('role:slave') && !info.includes('master_link_status:up')) return false;
      }
      return true;
    };
    await waitFor(
      async () => (await Promise.all(ports.map((port) => clusterOk(port).catch(() => false)))).every(Boolean) && (await replicasInSync()),
      {
        timeoutMs: onThisMachine(20_000),
        intervalMs: 200,
        what: 'the cluster to be ok with its replicas in sync',
      },
    );

    return {
      env: { REDIS_CLUSTER_NODES: ports.map((port) => `${HOST}:${port}`).join(',') },
      async masterPortOf(key: string) {
        for (const port of ports) {
          try {
            return await ask(port, async (redis) => {
              const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', key));
              const ranges = (await redis.call('CLUSTER', 'SLOTS')) as Array<
                [number, number, [string, number, ...unknown[]], ...unknown[]]
              >;
              const range = ranges.find(([from, to]) => slot >= from && slot <= to);
              if (!range) throw new Error(`slot ${slot} has no master`);
              return Number(range[2][1]);
            });
          } catch {
            // that node is down or does not know yet: ask the next
          }
        }
        throw new Error('no cluster node answers');
      },
      kill: (port: number) => servers.kill(port),
    };
  });
}
