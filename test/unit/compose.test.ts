// The compose files and the proxy's configuration, checked by reading (no Docker engine runs
// here): every setting the service reads reaches the containers, the overrides say what the
// README says they do, Redis and its Sentinels ask for passwords, the demo database starts only
// when asked for, and the proxy's limits let the service answer its own 408 and 413. The Redis
// scripts the files run are run for real in test/deploy/redis-recipe.test.ts.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@censo/shared';
import { VERSION, compose, interpolationDefault, read, settingsRead, type ComposeService } from '../deploy/recipes.js';

// Settings a compose deployment does not pass through, and why.
const NOT_PASSED = new Map([
  ['HOST', 'set by the image (0.0.0.0)'],
  ['PORT', 'set by the image (3000)'],
  ['UPLOAD_IDLE_MS', 'for tests: the 30 s idle cut of SPEC §5'],
  ['WORKER_CONCURRENCY', 'the API runs no jobs (--role=api): set on the workers'],
  ['AWS_REGION', 'read through S3_REGION in docker-compose.s3.yml'],
  ['S3_BUCKET', 'docker-compose.s3.yml'],
  ['S3_ENDPOINT', 'docker-compose.s3.yml'],
  ['S3_PREFIX', 'docker-compose.s3.yml'],
  ['S3_REGION', 'docker-compose.s3.yml'],
  ['REDIS_SENTINELS', 'docker-compose.sentinel.yml'],
  ['REDIS_SENTINEL_NAME', 'docker-compose.sentinel.yml'],
  ['REDIS_SENTINEL_PASSWORD', 'docker-compose.sentinel.yml (set without REDIS_SENTINELS it stops the start)'],
  ['REDIS_CLUSTER_NODES', 'a Redis Cluster is run outside compose (README)'],
]);

/** `${NAME:?message}`: Compose refuses to start without it. */
const required = (value: string | undefined) => /^\$\{[A-Z_]+:\?.+\}$/.test(value ?? '');
const commandLine = (service: ComposeService) => JSON.stringify([service.command ?? null, service.entrypoint ?? null]);

describe('docker-compose.yml', () => {
  const base = compose('docker-compose.yml');

  it('is named, which Compose v2 needs and the README says', () => {
    expect(base.name).toBe('censo-api');
  });

  it('passes every setting the service reads to the API, and the shared ones to the workers', () => {
    const api = Object.keys(base.services.api!.environment!);
    const worker = Object.keys(base.services.worker!.environment!);
    const missing = settingsRead().filter((name) => !NOT_PASSED.has(name) && !api.includes(name));
    expect(missing).toEqual([]);
    for (const name of ['REDIS_URL', 'QUEUE_PREFIX', 'UPLOAD_DIR', 'COLUMNS_FILE', 'WORKER_LOCK_DURATION_MS', 'WORKER_CONCURRENCY']) {
      expect(worker).toContain(name);
    }
  });

  it('publishes only the proxy, and spreads requests over every API replica', () => {
    const published = Object.entries(base.services)
      .filter(([, service]) => service.ports?.length)
      .map(([name]) => name);
    expect(published).toEqual(['proxy']);
    expect(base.services.api!.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(read('docker/caddy/Caddyfile')).toMatch(/dynamic a api 3000/);
  });

  it('gives the proxy limits that let the service answer its own 408 and 413', () => {
    const caddy = read('docker/caddy/Caddyfile');
    const seconds = (key: string) => Number(new RegExp(`^\\s*${key} (\\d+)s$`, 'm').exec(caddy)?.[1]);
    const env = base.services.api!.environment!;
    const defaultOf = (value: string) => Number(/:-(\d+)\}/.exec(value)?.[1]);
    const uploadS = defaultOf(env.UPLOAD_TIMEOUT_MS!) / 1000;
    const jobS = defaultOf(env.JOB_TIMEOUT_MS ?? base.services.worker!.environment!.JOB_TIMEOUT_MS!) / 1000;
    expect(seconds('read_body')).toBeGreaterThan(uploadS);
    expect(seconds('write')).toBeGreaterThan(uploadS + jobS);
    expect(seconds('response_header_timeout')).toBeGreaterThan(uploadS + jobS);
    const maxBodyMb = Number(/max_size (\d+)MB/.exec(caddy)?.[1]);
    expect(maxBodyMb).toBeGreaterThan(4 * 25);
  });

  it('gives Redis a password, required, that API and workers use, and never puts it on a command line', () => {
    const redis = base.services.redis!;
    expect(required(redis.environment!.REDIS_PASSWORD)).toBe(true);
    expect(redis.entrypoint).toEqual(['/bin/sh', '/opt/censo/start-redis.sh']);
    expect(redis.volumes).toContain('./deploy/vm/redis/start-redis.sh:/opt/censo/start-redis.sh:ro');
    // The script sources listen.sh from its own folder.
    expect(redis.volumes).toContain('./deploy/vm/redis/listen.sh:/opt/censo/listen.sh:ro');
    expect(redis.environment!.REDIS_MIN_REPLICAS_TO_WRITE).toBe('0');
    expect(JSON.stringify(redis.healthcheck!.test)).toContain('REDISCLI_AUTH=');
    for (const role of ['api', 'worker']) expect(required(base.services[role]!.environment!.REDIS_PASSWORD), role).toBe(true);
    for (const [name, service] of Object.entries(base.services)) expect(commandLine(service), name).not.toMatch(/requirepass|PASSWORD/);
  });

  it('starts the demo PostgreSQL only with the demo profile, and points the API at no database by default', () => {
    expect(base.services.postgres!.profiles).toEqual(['demo']);
    const others = Object.entries(base.services).filter(([name]) => name !== 'postgres');
    expect(others.filter(([, service]) => service.profiles).map(([name]) => name)).toEqual([]);
    // Compose waits for it only when the profile runs it.
    expect(base.services.api!.depends_on!.postgres).toEqual({ condition: 'service_healthy', required: false });
    expect(interpolationDefault(base.services.api!.environment!.DATABASE_URL!)).toBe('');
  });

  it('tags the image it builds with the package version, never latest', () => {
    for (const role of ['api', 'worker']) expect(base.services[role]!.image).toBe(`censo-api:${VERSION}`);
  });
});

describe('docker-compose.sentinel.yml', () => {
  const sentinel = compose('docker-compose.sentinel.yml');

  it('points API and workers at three Sentinels instead of one Redis address', () => {
    for (const role of ['api', 'worker']) {
      const env = sentinel.services[role]!.environment!;
      // Empty counts as unset (loadConfig): exactly one Redis setting remains.
      expect(env.REDIS_URL).toBe('');
      expect(env.REDIS_SENTINELS!.split(',')).toEqual(['sentinel-1:26379', 'sentinel-2:26379', 'sentinel-3:26379']);
      expect(env.REDIS_SENTINEL_NAME).toBe('censo');
    }
  });

  it('runs two replicas of the base Redis and three Sentinels with a quorum of two, from the tested scripts', () => {
    const redisGroup = ['redis', 'redis-replica-1', 'redis-replica-2'];
    for (const name of ['redis-replica-1', 'redis-replica-2']) {
      const replica = sentinel.services[name]!;
      expect(replica.entrypoint).toEqual(['/bin/sh', '/opt/censo/start-redis.sh']);
      expect(replica.environment!.REDIS_REPLICA_OF).toBe('redis 6379');
      expect(replica.volumes).toContain('./deploy/vm/redis/start-redis.sh:/opt/censo/start-redis.sh:ro');
      expect(replica.volumes).toContain('./deploy/vm/redis/listen.sh:/opt/censo/listen.sh:ro');
    }
    for (const name of redisGroup) {
      const env = sentinel.services[name]!.environment!;
      expect(required(env.REDIS_PASSWORD), name).toBe(true);
      // A master cut off from every replica stops taking writes a failover would lose.
      expect(env.REDIS_MIN_REPLICAS_TO_WRITE, name).toBe('1');
      expect(env.REDIS_ANNOUNCE_IP, name).toBe(name);
    }
    for (const name of ['sentinel-1', 'sentinel-2', 'sentinel-3']) {
      const service = sentinel.services[name]!;
      expect(service.entrypoint).toEqual(['/bin/sh', '/opt/censo/start-sentinel.sh']);
      expect(service.volumes).toContain('./deploy/vm/redis/start-sentinel.sh:/opt/censo/start-sentinel.sh:ro');
      expect(service.volumes).toContain('./deploy/vm/redis/listen.sh:/opt/censo/listen.sh:ro');
      const env = service.environment!;
      expect([env.REDIS_MASTER_HOST, env.REDIS_MASTER_PORT, env.REDIS_SENTINEL_NAME, env.SENTINEL_QUORUM]).toEqual([
        'redis',
        '6379',
        'censo',
        '2',
      ]);
      expect(env.REDIS_ANNOUNCE_IP).toBe(name);
      // Its own password (requirepass), and the servers' one (sentinel auth-pass).
      expect(required(env.REDIS_SENTINEL_PASSWORD)).toBe(true);
      expect(required(env.REDIS_PASSWORD)).toBe(true);
      expect(JSON.stringify(service.healthcheck!.test)).toContain('REDISCLI_AUTH=');
    }
    for (const role of ['api', 'worker']) expect(required(sentinel.services[role]!.environment!.REDIS_SENTINEL_PASSWORD), role).toBe(true);
    for (const [name, service] of Object.entries(sentinel.services))
      expect(commandLine(service), name).not.toMatch(/requirepass|auth-pass|PASSWORD/);
  });
});

describe('docker-compose.s3.yml', () => {
  it('expires what a crash leaves only after every result has outlived its retention: LOTE_MAX_HOURS + RESULT_TTL_HOURS + a day', () => {
    const s3 = compose('docker-compose.s3.yml');
    const base = compose('docker-compose.yml');
    const init = s3.services['minio-init']!;
    const days = Number(interpolationDefault(init.environment!.EXPIRE_DAYS!));
    const script = String(init.command);
    expect(script).toContain('mc ilm rule add --expire-days "$$EXPIRE_DAYS"');
    // An earlier rule (the old one-day one) would keep expiring results first: it is replaced.
    expect(script.indexOf('mc ilm rule rm --all --force')).toBeGreaterThan(-1);
    expect(script.indexOf('mc ilm rule rm --all --force')).toBeLessThan(script.indexOf('mc ilm rule add'));
    const api = base.services.api!.environment!;
    const config = loadConfig({
      LOTE_MAX_HOURS: interpolationDefault(api.LOTE_MAX_HOURS!),
      RESULT_TTL_HOURS: interpolationDefault(api.RESULT_TTL_HOURS!),
    });
    const hours = (config.loteMaxMs + config.resultTtlMs) / 3_600_000;
    expect(days).toBeGreaterThanOrEqual(Math.ceil(hours / 24) + 1);
    expect(days).toBe(5);
  });
});

describe('Dockerfile', () => {
  it('builds and runs on Node.js 24 LTS', () => {
    const from = [...read('Dockerfile').matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(from).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
  });
});
