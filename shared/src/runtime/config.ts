// The only reader of the environment. Entry points call loadConfig(process.env) once; everything
// else receives the frozen Config. Invalid settings throw ConfigError, which the entry point
// prints as one line before exiting 1 (SPEC §6).
import os from 'node:os';
import path from 'node:path';

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Whether PORT was given: a `start:worker` process serves /healthz and /metrics only then. */
  readonly portFromEnv: boolean;
  /** Tokens accepted on the upload routes; empty = not configured (fail closed). */
  readonly apiKeys: readonly string[];
  /** Tokens accepted on the query route: QUERY_API_KEY when set, else API_KEY. */
  readonly queryApiKeys: readonly string[];
  readonly metricsToken: string | null;
  /** HMAC key that makes query cursors tamper-evident; shared by every API instance. */
  readonly cursorSecret: string;
  readonly redisUrl: string | null;
  readonly queuePrefix: string;
  readonly databaseUrl: string | null;
  readonly databasePoolMax: number;
  readonly queriesFile: string | null;
  /** Extra column names and field labels (SPEC §1.2), loaded at start by loadColumnsFile. */
  readonly columnsFile: string | null;
  /** The API's upload folder (folder storage), or a worker's scratch folder for its jobs' files. */
  readonly uploadDir: string;
  /** Where a request's files live between the upload and the answer (SPEC §6). */
  readonly storage: StorageConfig;
  readonly jobTimeoutMs: number;
  /** Deadline for an upload body to arrive whole (SPEC §5), from the request's start. */
  readonly uploadTimeoutMs: number;
  /** An upload body that sends nothing for this long is cut too (SPEC §5: 30 s). */
  readonly uploadIdleMs: number;
  readonly queryTimeoutMs: number;
  readonly workerConcurrency: number;
  readonly maxInFlightUploads: number;
  readonly rateLimitPerMinute: number;
  readonly bullBoardToken: string | null;
  readonly logLevel: LogLevel;
  /** BullMQ worker lock: a job whose worker stops renewing it for this long counts as stalled. */
  readonly workerLockDurationMs: number;
  /** How often a worker looks for stalled jobs (of dead workers) and puts them back in the queue. */
  readonly workerStalledIntervalMs: number;
}

/** The shared `UPLOAD_DIR` folder, or an S3-compatible bucket when `S3_BUCKET` is set. */
export type StorageConfig =
  | { readonly kind: 'folder' }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      /** A non-AWS server (MinIO, Garage...): path-style addressing. null: AWS's own endpoints. */
      readonly endpoint: string | null;
      readonly region: string;
      /** Prepended to every key: '' or a prefix ending in '/'. */
      readonly prefix: string;
    };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env): Config {
  const apiKeys = keyList(env.API_KEY);
  const queryKeys = keyList(env.QUERY_API_KEY);
  const cpus = Math.max(1, os.availableParallelism());
  return Object.freeze({
    host: text(env.HOST) ?? '0.0.0.0',
    port: integer(env, 'PORT', 3000, 0, 65535),
    portFromEnv: text(env.PORT) !== null,
    apiKeys,
    queryApiKeys: queryKeys.length > 0 ? queryKeys : apiKeys,
    metricsToken: text(env.METRICS_TOKEN),
    // Without CURSOR_SECRET, instances that share the query keys derive the same secret, so a
    // cursor issued by one is accepted by another; rotating the keys invalidates old cursors.
    cursorSecret: text(env.CURSOR_SECRET) ?? `censo-cursor:${[...(queryKeys.length > 0 ? queryKeys : apiKeys)].sort().join(',')}`,
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    // Hash-tagged so that every BullMQ key of one deployment lands in one Redis Cluster slot.
    queuePrefix: text(env.QUEUE_PREFIX) ?? '{censo}',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databasePoolMax: integer(env, 'DATABASE_POOL_MAX', 10, 1, 1000),
    queriesFile: text(env.QUERIES_FILE),
    columnsFile: text(env.COLUMNS_FILE),
    uploadDir: path.resolve(text(env.UPLOAD_DIR) ?? path.join(os.tmpdir(), 'censo-api-uploads')),
    storage: storage(env),
    jobTimeoutMs: integer(env, 'JOB_TIMEOUT_MS', 120_000, 1, 3_600_000),
    uploadTimeoutMs: integer(env, 'UPLOAD_TIMEOUT_MS', 120_000, 1, 3_600_000),
    // Not in SPEC's settings list (SPEC §5 fixes 30 s); an override for tests and odd networks.
    uploadIdleMs: integer(env, 'UPLOAD_IDLE_MS', 30_000, 1, 3_600_000),
    queryTimeoutMs: integer(env, 'QUERY_TIMEOUT_MS', 10_000, 1, 3_600_000),
    workerConcurrency: integer(env, 'WORKER_CONCURRENCY', cpus, 1, 256),
    // Counted from onRequest to the response's end: under a saturated event loop a keep-alive
    // client's next request can start before its previous response's 'finish' is seen, so the
    // count runs above the number of clients; 128 leaves room for that at ~64 clients.
    maxInFlightUploads: integer(env, 'MAX_INFLIGHT_UPLOADS', 128, 1, 100_000),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 0, 0, 10_000_000),
    bullBoardToken: text(env.BULL_BOARD_TOKEN),
    logLevel: logLevel(env.LOG_LEVEL),
    // BullMQ's defaults; lowered in tests so a killed worker's job is retried within seconds.
    workerLockDurationMs: integer(env, 'WORKER_LOCK_DURATION_MS', 30_000, 1_000, 600_000),
    workerStalledIntervalMs: integer(env, 'WORKER_STALLED_INTERVAL_MS', 30_000, 1_000, 600_000),
  });
}

function text(value: string | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

/** Comma-separated tokens, so keys can be rotated without downtime (SPEC §4). */
function keyList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((token) => token.trim())
    .filter((token) => token.length > 0);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env[name]);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

function url(env: Env, name: string, protocols: readonly string[]): string | null {
  const raw = text(env[name]);
  if (raw === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw;
}

// Bucket names as S3 allows them (3–63 lowercase letters, digits, dots and hyphens, starting and
// ending with a letter or digit); MinIO and Garage follow the same rule.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
// A key prefix of path segments of safe characters; no '..' or empty segment.
const PREFIX = /^([A-Za-z0-9!_.*'()-]+\/)*[A-Za-z0-9!_.*'()-]+\/?$/;
const REGION = /^[a-z0-9-]{1,64}$/;

function storage(env: Env): StorageConfig {
  const bucket = text(env.S3_BUCKET);
  if (bucket === null) {
    for (const name of ['S3_ENDPOINT', 'S3_REGION', 'S3_PREFIX']) {
      if (text(env[name]) !== null) throw new ConfigError(`${name} is set but S3_BUCKET is not`);
    }
    return { kind: 'folder' };
  }
  if (!BUCKET.test(bucket)) throw new ConfigError(`S3_BUCKET is not a valid bucket name: "${bucket}"`);
  const region = text(env.S3_REGION) ?? text(env.AWS_REGION) ?? 'us-east-1';
  if (!REGION.test(region)) throw new ConfigError(`S3_REGION is not a valid region: "${region}"`);
  const rawPrefix = text(env.S3_PREFIX);
  if (rawPrefix !== null && (!PREFIX.test(rawPrefix) || rawPrefix.split('/').some((segment) => segment === '..' || segment === '.'))) {
    throw new ConfigError(`S3_PREFIX must be path segments of letters, digits and !_.*'()- separated by "/", got "${rawPrefix}"`);
  }
  const prefix = rawPrefix === null ? '' : rawPrefix.endsWith('/') ? rawPrefix : `${rawPrefix}/`;
  return { kind: 's3', bucket, endpoint: url(env, 'S3_ENDPOINT', ['http:', 'https:']), region, prefix };
}

function logLevel(value: string | undefined): LogLevel {
  const raw = text(value)?.toLowerCase() ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw as LogLevel;
}
