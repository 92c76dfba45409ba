// The compose files and the proxy's configuration, checked by reading (no Docker engine runs
// here): every setting the service reads reaches the containers, the overrides say what the
// README says they do, and the proxy's limits let the service answer its own 408 and 413.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(`${root}${file}`, 'utf8');

interface Service {
  environment?: Record<string, string>;
  command?: string[] | string;
  ports?: string[];
  deploy?: { replicas?: number };
}
interface Compose {
  name?: string;
  services: Record<string, Service>;
}

function compose(file: string): Compose {
  // `!reset` (Compose 2.24+) clears a list of the file it overrides.
  return parse(read(file), { merge: true, customTags: [{ tag: '!reset', resolve: () => [] }] }) as Compose;
}

/** Every environment variable loadConfig reads, from its own source. */
function settingsRead(): string[] {
  const source = read('shared/src/runtime/config.ts');
  const names = [...source.matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!);
  return [...new Set(names)].sort();
}

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
  ['REDIS_SENTINEL_PASSWORD', 'docker-compose.sentinel.yml has no Sentinel password'],
  ['REDIS_CLUSTER_NODES', 'a Redis Cluster is run outside compose (README)'],
]);

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

  it('runs two replicas of the base Redis and three Sentinels with a quorum of two', () => {
    for (const name of ['redis-replica-1', 'redis-replica-2']) {
      expect(sentinel.services[name]!.command).toEqual(expect.arrayContaining(['--replicaof', 'redis', '6379']));
    }
    for (const name of ['sentinel-1', 'sentinel-2', 'sentinel-3']) {
      const script = String(sentinel.services[name]!.command);
      expect(script).toContain("'sentinel monitor censo redis 6379 2'");
      expect(script).toContain('--sentinel');
    }
  });
});

describe('Dockerfile', () => {
  it('builds and runs on Node.js 24 LTS', () => {
    const from = [...read('Dockerfile').matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(from).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
  });
});
