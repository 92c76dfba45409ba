// The Redis group of the recipes (deploy/vm/redis, used by deploy/vm/compose/redis.yml and the
// root compose files), run as the operator runs it: a master and replicas from start-redis.sh,
// three Sentinels from start-sentinel.sh, on loopback ports of this test's own.
// - With passwords (plain TCP, REDIS_PLAIN_TCP=yes as the single-host compose files ask): every
//   server asks for its password, the replicas follow as the `replicacao` user, the Sentinels ask
//   for theirs and log in to the servers as the `sentinela` user, no password is on a command
//   line, and the service's own client, configured as .env.example says, writes again after a
//   failover that needs all of that. The service's user (`default`) runs a BullMQ job and none of
//   the commands that would empty or reconfigure the server; the other users only their own work.
// - With TLS from an internal CA: a worker started with rediss:// Sentinels is ready only when
//   NODE_EXTRA_CA_CERTS names that CA (docs/operacao.md, "TLS dentro da rede").
// - Without a certificate and without REDIS_PLAIN_TCP=yes, neither script starts.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedisClient, createRedisClient, loadConfig, type RedisClient } from '@censo/shared';
import { startServiceProcess } from '../helpers/processes.js';
import { uniqueQueuePrefix } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait-for.js';
import { ROOT, requireTool, runTool } from './recipes.js';
import { freePort } from '../helpers/ports.js';
import { onThisMachine } from '../helpers/deadline.js';

const HOST = '127.0.0.1';
const PASSWORD = 'senha-do-redis-0123456789abcdef';
const SENTINEL_PASSWORD = 'senha-do-sentinel-0123456789abcdef';
const REPLICATION_PASSWORD = 'senha-da-replicacao-0123456789abcdef';
const SENTINEL_AUTH_PASSWORD = 'senha-do-usuario-sentinela-0123456789abcdef';
const ADMIN_PASSWORD = 'senha-do-admin-0123456789abcdef';
/** What every server of a group is given (start-redis.sh: one user per role). */
const SERVER_ENV = {
  REDIS_PASSWORD: PASSWORD,
  REDIS_REPLICATION_PASSWORD: REPLICATION_PASSWORD,
  REDIS_SENTINEL_AUTH_PASSWORD: SENTINEL_AUTH_PASSWORD,
  REDIS_ADMIN_PASSWORD: ADMIN_PASSWORD,
};
const GROUP = 'censo';
// A Sentinel learns a master's replicas from the INFO it sends every 10 s, and the other Sentinels
// from hello messages every 2 s. start() links the replicas first, so the first INFO lists them
// (about 2 s here); this allows for that INFO missing them anyway on a loaded machine.
const SENTINEL_DISCOVERY_MS = onThisMachine(45_000);

interface Server {
  readonly port: number;
  readonly dir: string;
  readonly child: ChildProcess;
}

interface Tls {
  readonly cert: string;
  readonly key: string;
  readonly ca: string;
}

/** One group: a master, `replicaCount` replicas, three Sentinels; stop() kills them all. */
class RedisGroup {
  readonly servers: Server[] = [];
  master!: Server;
  replicas: Server[] = [];
  sentinels: Server[] = [];

  constructor(
    readonly dir: string,
    readonly tls: Tls | null,
  ) {}

  async start(replicaCount: number): Promise<void> {
    this.master = await this.#script('start-redis.sh', SERVER_ENV);
    for (let i = 0; i < replicaCount; i++) {
      this.replicas.push(await this.#script('start-redis.sh', { ...SERVER_ENV, REDIS_REPLICA_OF: `${HOST} ${this.master.port}` }));
    }
    const answers = (server: Server, password: string) =>
      this.ask(server.port, password, async (r) => (await r.ping()) === 'PONG').catch(() => false);
    for (const server of [this.master, ...this.replicas]) {
      await waitFor(() => answers(server, PASSWORD), { timeoutMs: onThisMachine(15_000), what: `redis on ${server.port}` });
    }
    // The Sentinels start once the replicas are linked, so that the master's answer to their first
    // INFO already lists them: otherwise they learn of them only at the next INFO, 10 s later.
    for (const replica of this.replicas) {
      await waitFor(() => this.linked(replica), { timeoutMs: onThisMachine(15_000), what: `replica ${replica.port} linked` });
    }
    for (let i = 0; i < 3; i++) {
      this.sentinels.push(
        await this.#script('start-sentinel.sh', {
          REDIS_SENTINEL_AUTH_PASSWORD: SENTINEL_AUTH_PASSWORD,
          REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
          REDIS_MASTER_HOST: HOST,
          REDIS_MASTER_PORT: String(this.master.port),
          REDIS_SENTINEL_NAME: GROUP,
          // The README's floor; the recipe's default is 5000.
          SENTINEL_DOWN_AFTER_MS: '2000',
          // A failed election is tried again after twice this: 12 s here, not the recipe's 60 s.
          SENTINEL_FAILOVER_TIMEOUT_MS: '6000',
        }),
      );
    }
    for (const server of this.sentinels) {
      await waitFor(() => answers(server, SENTINEL_PASSWORD), { timeoutMs: onThisMachine(15_000), what: `sentinel on ${server.port}` });
    }
  }

  /** Whether a replica's link to its master is up. */
  async linked(replica: Server): Promise<boolean> {
    return /master_link_status:up/.test(await this.ask(replica.port, PASSWORD, (r) => r.info('replication')).catch(() => ''));
  }

  async #script(script: 'start-redis.sh' | 'start-sentinel.sh', env: Record<string, string>): Promise<Server> {
    const port = await freePort();
    const data = path.join(this.dir, `${script}-${port}`);
    const tls = this.tls
      ? { REDIS_TLS_CERT_FILE: this.tls.cert, REDIS_TLS_KEY_FILE: this.tls.key, REDIS_TLS_CA_CERT_FILE: this.tls.ca }
      : { REDIS_PLAIN_TCP: 'yes' };
    const child = spawn('sh', [path.join(ROOT, 'deploy/vm/redis', script)], {
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_BIND: HOST,
        REDIS_ANNOUNCE_IP: HOST,
        REDIS_DATA_DIR: data,
        [script === 'start-redis.sh' ? 'REDIS_PORT' : 'SENTINEL_PORT']: String(port),
        ...tls,
        ...env,
      },
      stdio: 'ignore',
    });
    const server = { port, dir: data, child };
    this.servers.push(server);
    return server;
  }

  /** One command on its own short-lived connection; `password` null: unauthenticated. */
  async ask<T>(port: number, password: string | null, run: (redis: Redis) => Promise<T>, options: RedisOptions = {}): Promise<T> {
    const redis = new Redis({
      host: HOST,
      port,
      ...(password === null ? {} : { password }),
      ...(this.tls ? { tls: { ca: await readFile(this.tls.ca) } } : {}),
      lazyConnect: true,
      // The ready check's INFO would meet NOAUTH first and close the connection: let the test's
      // own command get the server's answer.
      enableReadyCheck: false,
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

  async masterPort(sentinel: Server): Promise<number> {
    const reply = (await this.ask(sentinel.port, SENTINEL_PASSWORD, (r) =>
      r.call('SENTINEL', 'get-master-addr-by-name', GROUP),
    )) as string[];
    return Number(reply[1]);
  }

  /** What the first Sentinel last said of the group, for a failure message. */
  lastSeen = 'nothing yet';

  /** Whether the first Sentinel knows `replicaCount` replicas and the two other Sentinels. */
  async sentinelsKnow(replicaCount: number): Promise<boolean> {
    const fields = await this.masterFields(this.sentinels[0]!).catch(
      (error: Error) => ({ error: error.message }) as Record<string, string>,
    );
    this.lastSeen = JSON.stringify({
      error: fields.error,
      'num-slaves': fields['num-slaves'],
      'num-other-sentinels': fields['num-other-sentinels'],
      flags: fields.flags,
    });
    return fields['num-slaves'] === String(replicaCount) && fields['num-other-sentinels'] === '2';
  }

  /** The fields of SENTINEL MASTER as an object. */
  async masterFields(sentinel: Server): Promise<Record<string, string>> {
    const flat = (await this.ask(sentinel.port, SENTINEL_PASSWORD, (r) => r.call('SENTINEL', 'master', GROUP))) as string[];
    return Object.fromEntries(flat.flatMap((value, i) => (i % 2 === 0 ? [[value, flat[i + 1]!]] : [])));
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.servers.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }),
    );
  }
}

let dir = '';
beforeAll(async () => {
  requireTool('redis-server');
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-redis-recipe-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('deploy/vm/redis scripts, with passwords', () => {
  let group: RedisGroup;
  beforeAll(async () => {
    group = new RedisGroup(path.join(dir, 'senhas'), null);
    await group.start(2);
  }, onThisMachine(60_000));
  afterAll(async () => {
    await group?.stop();
  });

  it('every server and every Sentinel refuses a client without its password', async () => {
    for (const server of [group.master, ...group.replicas, ...group.sentinels]) {
      await expect(
        group.ask(server.port, null, (r) => r.ping()),
        `port ${server.port}`,
      ).rejects.toThrow(/NOAUTH/);
    }
    await expect(group.ask(group.master.port, null, (r) => r.call('AUTH', 'outra-senha'))).rejects.toThrow(/WRONGPASS/);
  });

  it('keeps the passwords in 0600 files, never on a command line', async () => {
    for (const server of group.servers) {
      const commandLine = (await readFile(`/proc/${server.child.pid}/cmdline`, 'utf8')).split('\0').join(' ');
      expect(commandLine).toMatch(/redis-server/);
      expect(commandLine).not.toContain(PASSWORD);
      expect(commandLine).not.toContain(SENTINEL_PASSWORD);
    }
    for (const file of [path.join(group.master.dir, 'redis.conf'), path.join(group.sentinels[0]!.dir, 'sentinel.conf')]) {
      expect((await stat(file)).mode & 0o777, file).toBe(0o600);
    }
  });

  it(
    'the replicas follow the master with masterauth, and the Sentinels see them and each other',
    async () => {
      for (const replica of group.replicas) expect(await group.linked(replica), `replica ${replica.port}`).toBe(true);
      await waitFor(() => group.sentinelsKnow(2), {
        timeoutMs: SENTINEL_DISCOVERY_MS,
        what: 'the sentinels to know both replicas and each other',
        seen: () => group.lastSeen,
      });
      expect((await group.masterFields(group.sentinels[0]!)).flags).toBe('master');
      expect(await group.masterPort(group.sentinels[0]!)).toBe(group.master.port);
    },
    onThisMachine(90_000),
  );

  // Before the failover below, which kills this master.
  it('gives the service a user that runs a BullMQ job round trip and none of the commands that empty or reconfigure the server', async () => {
    const connection = { host: HOST, port: group.master.port, password: PASSWORD, maxRetriesPerRequest: null };
    const prefix = '{censo-acl}';
    const queue = new Queue('receita-acl', { connection, prefix });
    const worker = new Worker('receita-acl', async (job) => ({ dobro: (job.data as { n: number }).n * 2 }), { connection, prefix });
    try {
      const done = new Promise<unknown>((resolve, reject) => {
        worker.on('completed', (_job, value) => resolve(value));
        worker.on('failed', (_job, err) => reject(err));
      });
      await queue.add('dobrar', { n: 21 });
      expect(await done).toEqual({ dobro: 42 });
      // The APIs' contract handshake (SPEC §12) lists the connected workers: CLIENT LIST, allowed.
      expect((await queue.getWorkers()).length).toBeGreaterThanOrEqual(1);
    } finally {
      await worker.close();
      await queue.close();
    }
    // As the service authenticates: AUTH <REDIS_PASSWORD>, the `default` user.
    const refused = [['FLUSHALL'], ['FLUSHDB'], ['KEYS', '*'], ['CONFIG', 'GET', 'requirepass'], ['SHUTDOWN'], ['MONITOR']];
    for (const command of refused) {
      await expect(
        group.ask(group.master.port, PASSWORD, (r) => r.call(command[0]!, ...command.slice(1))),
        command.join(' '),
      ).rejects.toThrow(/NOPERM/);
    }
    // DEBUG is refused before the ACL is consulted (enable-debug-command no), so its ACL verdict
    // is asked of the server itself, as the operator's user.
    for (const command of [['DEBUG', 'SLEEP', '0'], ['FLUSHALL'], ['CONFIG', 'SET', 'appendonly', 'no'], ['REPLICAOF', 'NO', 'ONE']]) {
      const verdict = await group.ask(group.master.port, null, async (r) => {
        await r.call('AUTH', 'censo-admin', ADMIN_PASSWORD);
        return r.call('ACL', 'DRYRUN', 'default', ...command);
      });
      expect(String(verdict), command.join(' ')).toMatch(/no permissions/);
    }
    expect(await group.ask(group.master.port, PASSWORD, (r) => r.info('server'))).toMatch(/redis_version:/);
  });

  it('gives the replicas, the Sentinels and the operator users of their own, each limited to its work', async () => {
    const as = (user: string, password: string, run: (redis: Redis) => Promise<unknown>) =>
      group.ask(group.master.port, null, async (r) => {
        await r.call('AUTH', user, password);
        return run(r);
      });
    // The replicas are linked (above) as `replicacao`; that user reads no key and runs no command.
    await expect(as('replicacao', REPLICATION_PASSWORD, (r) => r.get('{censo}:qualquer'))).rejects.toThrow(/NOPERM/);
    await expect(as('replicacao', REPLICATION_PASSWORD, (r) => r.call('FLUSHALL'))).rejects.toThrow(/NOPERM/);
    await expect(as('sentinela', SENTINEL_AUTH_PASSWORD, (r) => r.get('{censo}:qualquer'))).rejects.toThrow(/NOPERM/);
    await expect(as('sentinela', SENTINEL_AUTH_PASSWORD, (r) => r.call('FLUSHALL'))).rejects.toThrow(/NOPERM/);
    // The service's password is no other user's.
    await expect(as('censo-admin', PASSWORD, (r) => r.ping())).rejects.toThrow(/WRONGPASS/);
    expect(await as('censo-admin', ADMIN_PASSWORD, (r) => r.call('CONFIG', 'GET', 'appendonly'))).toEqual(['appendonly', 'yes']);
    const conf = await readFile(path.join(group.master.dir, 'redis.conf'), 'utf8');
    expect(conf).toMatch(/^masteruser replicacao$/m);
    expect(conf).not.toMatch(/^requirepass /m);
    const sentinelConf = await readFile(path.join(group.sentinels[0]!.dir, 'sentinel.conf'), 'utf8');
    expect(sentinelConf).toMatch(new RegExp(`^sentinel auth-user ${GROUP} sentinela$`, 'm'));
    expect(sentinelConf).not.toContain(PASSWORD);
  });

  it(
    'the service, set up as .env.example says, writes through the Sentinels, and again after the master is lost',
    async () => {
      const config = loadConfig({
        REDIS_SENTINELS: group.sentinels.map((s) => `${HOST}:${s.port}`).join(','),
        REDIS_SENTINEL_NAME: GROUP,
        REDIS_PASSWORD: PASSWORD,
        REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
      });
      const client: RedisClient = createRedisClient(config.redis!, 'fail-fast');
      client.on('error', () => undefined);
      const writes = async (value: string) => {
        try {
          return (await client.set('{censo}:teste-da-receita', value)) === 'OK';
        } catch {
          return false;
        }
      };
      try {
        await waitFor(() => writes('antes'), { timeoutMs: onThisMachine(15_000), what: 'a first write' });
        // The master goes away: the Sentinels (with the servers' password) promote a replica, which
        // takes writes once the other replica follows it (min-replicas-to-write 1).
        const { master } = group;
        const exited = once(master.child, 'exit');
        master.child.kill('SIGKILL');
        await exited;
        // Seconds normally; on a loaded machine an election can fail, and the Sentinels try again
        // after twice the failover-timeout (6 s here).
        await waitFor(async () => (await group.masterPort(group.sentinels[1]!).catch(() => master.port)) !== master.port, {
          timeoutMs: onThisMachine(60_000),
          intervalMs: 200,
          what: 'a replica promoted',
        });
        const promoted = await group.masterPort(group.sentinels[1]!);
        expect(group.replicas.map((r) => r.port)).toContain(promoted);
        await waitFor(() => writes('depois'), { timeoutMs: onThisMachine(30_000), intervalMs: 200, what: 'a write after the failover' });
        expect(await group.ask(promoted, PASSWORD, (r) => r.get('{censo}:teste-da-receita'))).toBe('depois');
      } finally {
        await closeRedisClient(client);
      }
    },
    onThisMachine(120_000),
  );

  it('refuses to start without a password, without the role users in a group, or with one the file could not hold', async () => {
    const run = async (env: Record<string, string>, script = 'start-redis.sh') => {
      const child = spawn('sh', [path.join(ROOT, 'deploy/vm/redis', script)], {
        env: { PATH: process.env.PATH ?? '', REDIS_DATA_DIR: path.join(dir, 'recusada'), REDIS_PLAIN_TCP: 'yes', ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, stderr };
    };
    const missing = await run({});
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('REDIS_PASSWORD is required');
    const lone = { REDIS_MIN_REPLICAS_TO_WRITE: '0' };
    const spaced = await run({ ...lone, REDIS_PASSWORD: 'duas palavras' });
    expect(spaced.code).toBe(1);
    expect(spaced.stderr).toContain('REDIS_PASSWORD may hold only letters, digits');
    // A member of a group (the default) needs the replicas', the Sentinels' and the operator's users.
    const grouped = await run({ REDIS_PASSWORD: PASSWORD });
    expect(grouped.code).not.toBe(0);
    expect(grouped.stderr).toContain('REDIS_REPLICATION_PASSWORD is required');
    const follower = await run({ ...SERVER_ENV, REDIS_ADMIN_PASSWORD: '', REDIS_REPLICA_OF: `${HOST} 6379` });
    expect(follower.stderr).toContain('REDIS_ADMIN_PASSWORD is required');
    // TLS unless REDIS_PLAIN_TCP=yes says otherwise: no certificate, no start, for either script.
    const noTls = await run({ ...SERVER_ENV, REDIS_PLAIN_TCP: '' });
    expect(noTls.code).not.toBe(0);
    expect(noTls.stderr).toContain('TLS is required');
    const sentinelNoTls = await run(
      {
        REDIS_SENTINEL_AUTH_PASSWORD: SENTINEL_AUTH_PASSWORD,
        REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
        REDIS_MASTER_HOST: HOST,
        REDIS_PLAIN_TCP: '',
      },
      'start-sentinel.sh',
    );
    expect(sentinelNoTls.code).not.toBe(0);
    expect(sentinelNoTls.stderr).toContain('TLS is required');
    await expect(stat(path.join(dir, 'recusada', 'redis.conf'))).rejects.toThrow(/ENOENT/);
    await expect(stat(path.join(dir, 'recusada', 'sentinel.conf'))).rejects.toThrow(/ENOENT/);
  });
});

describe('deploy/vm/redis scripts, with TLS from an internal CA', () => {
  let group: RedisGroup;
  let tls: Tls;
  const queuePrefix = uniqueQueuePrefix();

  beforeAll(async () => {
    // An internal CA and a certificate for the address the servers announce, as docs/operacao.md
    // tells the operator to make them.
    const openssl = requireTool('openssl');
    const certs = path.join(dir, 'ac-interna');
    await mkdir(certs);
    tls = { ca: path.join(certs, 'ca-interna.crt'), cert: path.join(certs, 'redis.crt'), key: path.join(certs, 'redis.key') };
    const ok = async (args: string[]) => {
      const result = await runTool(openssl, args, { cwd: certs });
      if (result.code !== 0) throw new Error(`openssl ${args[0]}: ${result.stderr}`);
    };
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    await ok(['req', '-x509', ...ec, '-keyout', 'ca-interna.key', '-out', tls.ca, '-days', '1', '-subj', '/CN=AC interna de teste']);
    await ok(['req', ...ec, '-keyout', tls.key, '-out', 'redis.csr', '-subj', `/CN=${HOST}`]);
    await writeFile(path.join(certs, 'san.ext'), `subjectAltName=IP:${HOST}\n`);
    await ok([
      'x509',
      '-req',
      '-in',
      'redis.csr',
      '-CA',
      tls.ca,
      '-CAkey',
      'ca-interna.key',
      '-CAcreateserial',
      '-out',
      tls.cert,
      '-days',
      '1',
      '-extfile',
      'san.ext',
    ]);

    group = new RedisGroup(path.join(dir, 'tls'), tls);
    await group.start(1);
  }, onThisMachine(60_000));
  // The group's servers, and the keys the worker wrote in them, go with it.
  afterAll(async () => {
    await group?.stop();
  });

  it(
    'speaks TLS alone: a plain client gets no answer, the replica follows over TLS, the Sentinels see the group',
    async () => {
      await expect(group.ask(group.master.port, PASSWORD, (r) => r.ping(), { tls: undefined })).rejects.toThrow();
      expect(await group.linked(group.replicas[0]!)).toBe(true);
      await waitFor(() => group.sentinelsKnow(1), {
        timeoutMs: SENTINEL_DISCOVERY_MS,
        what: 'the sentinels to know the replica and each other over TLS',
        seen: () => group.lastSeen,
      });
    },
    onThisMachine(90_000),
  );

  it(
    'a worker with rediss:// Sentinels is ready with NODE_EXTRA_CA_CERTS naming the CA, and not without it',
    async () => {
      const uploads = path.join(dir, 'uploads-tls');
      const env = {
        REDIS_SENTINELS: group.sentinels.map((s) => `rediss://${HOST}:${s.port}`).join(','),
        REDIS_SENTINEL_NAME: GROUP,
        REDIS_PASSWORD: PASSWORD,
        REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
        QUEUE_PREFIX: queuePrefix,
        UPLOAD_DIR: uploads,
        HOST,
        PORT: '0',
        WORKER_CONCURRENCY: '1',
        LOG_LEVEL: 'info',
      };
      const readiness = async (extra: Record<string, string>) => {
        const worker = startServiceProcess('services/worker/dist/main.js', { ...env, ...extra });
        try {
          const url = String((await worker.line('worker health server listening', onThisMachine(30_000))).url);
          let last = { status: 0, body: '' };
          // Ready, or still not ready after the client's first connection attempts have all had time.
          await waitFor(
            async () => {
              const response = await fetch(`${url}/readyz`);
              last = { status: response.status, body: await response.text() };
              return last.status === 200;
            },
            { timeoutMs: onThisMachine(8_000), intervalMs: 250, what: 'readiness' },
          ).catch(() => undefined);
          return last;
        } finally {
          const timer = setTimeout(() => worker.child.kill('SIGKILL'), 10_000);
          await worker.stop();
          clearTimeout(timer);
        }
      };
      const trusted = await readiness({ NODE_EXTRA_CA_CERTS: tls.ca });
      expect(trusted.status).toBe(200);
      expect(JSON.parse(trusted.body)).toMatchObject({ checks: { redis: 'ok' } });
      const untrusted = await readiness({});
      expect(untrusted.status).toBe(503);
      expect(JSON.parse(untrusted.body)).toMatchObject({ checks: { redis: 'falha' } });
    },
    onThisMachine(90_000),
  );
});
