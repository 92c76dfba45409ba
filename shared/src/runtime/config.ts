// The only reader of the environment. Entry points call loadConfig(process.env) once; everything
// else receives the frozen Config. Invalid settings throw ConfigError, which the entry point
// prints as one line before exiting 1 (SPEC §6).
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MAX_QUEUE_SHARDS } from '../queue/shards.js';

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
  /** Where the queue lives (SPEC §9); null: no queue, jobs run in-process (embedded mode). */
  readonly redis: RedisConfig | null;
  readonly queuePrefix: string;
  /**
   * How many queues the jobs are spread over (QUEUE_SHARDS, queue mode; default 1). Each shard is a
   * copy of the queue in a hash slot of its own (shared/src/queue/shards.ts), so a Redis Cluster
   * spreads them over its masters; every worker takes from all of them.
   */
  readonly queueShards: number;
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
  /** How long a finished asynchronous task (or batch) and its result are kept (SPEC §7.1: RESULT_TTL_HOURS). */
  readonly resultTtlMs: number;
  /** Asynchronous tasks allowed to wait before new ones get 503 (SPEC §7.5). */
  readonly maxQueuedTarefas: number;
  /**
   * Most asynchronous tasks of one request carried by one queue job (TAREFAS_POR_JOB, queue mode
   * only). Default 50, what `censo lote --servidor` sends a request (and BENCHMARKS.md §6
   * measured); the API queues groups only while every live worker announces it reads them, else a
   * job per task (SPEC §12). 1 queues a job per task always, as versions up to 0.3.0 did.
   */
  readonly tarefasPorJob: number;
  /** A batch closes itself this long after its creation at the latest (SPEC §7.3: LOTE_MAX_HOURS). */
  readonly loteMaxMs: number;
  /** Open batches one principal may hold before a new one gets 429 (SPEC §7.3). */
  readonly maxLotesAbertos: number;
  /** Batches a principal may create in any hour (sliding), open or not (issue 50). */
  readonly maxLotesPorHora: number;
  /**
   * Which peers' X-Forwarded-Proto/For count (SPEC §9: TRUST_PROXY): false (none), true (any: only
   * when nothing but the proxy can reach the port), or the proxies' addresses and CIDRs.
   */
  readonly trustProxy: boolean | readonly string[];
  /** Webhooks may use http and private or loopback addresses (SPEC §7.4: tests, internal networks). */
  readonly webhookAllowPrivate: boolean;
  /** Staff sign-in with the secretariat's OpenID Provider (SPEC §8); null: the page uses the key. */
  readonly signIn: SignInConfig | null;
  /** Where the access log of SPEC §8 goes: 'stdout' or a file path (appended to). */
  readonly accessLog: string;
}

/** The OpenID Connect relying party (SPEC §8), every value checked at start. */
export interface SignInConfig {
  /** The provider's issuer; discovery at `${issuer}/.well-known/openid-configuration`. */
  readonly issuer: string;
  readonly clientId: string;
  /** null: a public client (PKCE alone authenticates the code exchange). */
  readonly clientSecret: string | null;
  /** The service's external base URL, without a trailing '/'; the redirect URI is `${publicUrl}/auth/callback`. */
  readonly publicUrl: string;
  /** Keys the stored sessions (HMAC of the cookie's id), so the store never holds a usable cookie value. */
  readonly sessionSecret: string;
  readonly scopes: string;
  /** The claim holding the person's groups or roles: a name, or a dotted path (`realm_access.roles`). */
  readonly rolesClaim: string;
  /** Claim values that grant the upload routes and the query route. */
  readonly rolesRetorno: readonly string[];
  readonly rolesConsulta: readonly string[];
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

/** One Redis address of a Sentinel or Cluster list. */
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/**
 * The three ways to reach Redis (SPEC §9), exactly one of them set. `password` is REDIS_PASSWORD
 * (with `url`, a password inside the URL is used instead); `tls` comes from `rediss://`.
 */
export type RedisConfig =
  | { readonly kind: 'url'; readonly url: string; readonly password: string | null }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisNode[];
      /** The master group name the sentinels monitor. */
      readonly name: string;
      readonly sentinelPassword: string | null;
      readonly password: string | null;
      readonly tls: boolean;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisNode[]; readonly password: string | null; readonly tls: boolean };

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
    redis: redis(env),
    queuePrefix: queuePrefix(env),
    queueShards: integer(env, 'QUEUE_SHARDS', 1, 1, MAX_QUEUE_SHARDS),
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
    // Hours, a decimal allowed (0.5 = 30 min), so a short retention can be tried without waiting a day.
    resultTtlMs: Math.round(hours(env, 'RESULT_TTL_HOURS', 24, 8_760) * 3_600_000),
    maxQueuedTarefas: integer(env, 'MAX_QUEUED_TAREFAS', 10_000, 1, 10_000_000),
    tarefasPorJob: integer(env, 'TAREFAS_POR_JOB', 50, 1, 1_000),
    loteMaxMs: Math.round(hours(env, 'LOTE_MAX_HOURS', 72, 8_760) * 3_600_000),
    maxLotesAbertos: integer(env, 'MAX_LOTES_ABERTOS', 100, 1, 1_000_000),
    // Issue 50: MAX_LOTES_ABERTOS alone let a loop of create-and-close make batches without end.
    maxLotesPorHora: integer(env, 'MAX_LOTES_POR_HORA', 200, 1, 1_000_000),
    trustProxy: trustProxy(env.TRUST_PROXY),
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE'),
    signIn: signIn(env),
    accessLog: accessLog(env),
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

/** A positive number of hours, at most `max`; at least one second. */
function hours(env: Env, name: string, fallback: number, max: number): number {
  const raw = text(env[name]);
  if (raw === null) return fallback;
  const value = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  if (!(value * 3_600 >= 1 && value <= max))
    throw new ConfigError(`${name} must be a number of hours between 0.0003 and ${max}, got "${raw}"`);
  return value;
}

function flag(env: Env, name: string): boolean {
  const raw = text(env[name])?.toLowerCase() ?? 'false';
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

/**
 * TRUST_PROXY: `false`/`off` (the default), `true`, or comma-separated IPv4/IPv6 addresses and
 * CIDRs of the proxies (the loopback `127.0.0.1` for a proxy on the same host).
 */
function trustProxy(value: string | undefined): boolean | string[] {
  const raw = text(value);
  if (raw === null || /^(false|off)$/i.test(raw)) return false;
  if (/^true$/i.test(raw)) return true;
  const entries = keyList(raw);
  for (const entry of entries) {
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const badBits = bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || badBits || rest.length > 0) {
      throw new ConfigError(`TRUST_PROXY must be false, true or proxy addresses/CIDRs separated by commas, got "${entry}"`);
    }
  }
  return entries;
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

const REDIS_CHOICES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

function redis(env: Env): RedisConfig | null {
  const chosen = REDIS_CHOICES.filter((name) => text(env[name]) !== null);
  if (chosen.length > 1) throw new ConfigError(`set only one of ${REDIS_CHOICES.join(', ')} (got ${chosen.join(' and ')})`);
  const password = text(env.REDIS_PASSWORD);
  const sentinelName = text(env.REDIS_SENTINEL_NAME);
  const sentinelPassword = text(env.REDIS_SENTINEL_PASSWORD);
  if (chosen[0] !== 'REDIS_SENTINELS') {
    for (const name of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD']) {
      if (text(env[name]) !== null) throw new ConfigError(`${name} is set but REDIS_SENTINELS is not`);
    }
  }
  const redisUrl = url(env, 'REDIS_URL', ['redis:', 'rediss:']);
  if (redisUrl !== null) {
    if (password !== null && new URL(redisUrl).password !== '') {
      throw new ConfigError('REDIS_PASSWORD is set and REDIS_URL holds a password too: give it once');
    }
    return { kind: 'url', url: redisUrl, password };
  }
  if (chosen[0] === 'REDIS_SENTINELS') {
    const { nodes, tls } = redisNodes(env, 'REDIS_SENTINELS', 26379);
    if (sentinelName === null)
      throw new ConfigError('REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the master group name the sentinels monitor)');
    return { kind: 'sentinel', sentinels: nodes, name: sentinelName, sentinelPassword, password, tls };
  }
  if (chosen[0] === 'REDIS_CLUSTER_NODES') {
    const { nodes, tls } = redisNodes(env, 'REDIS_CLUSTER_NODES', 6379);
    return { kind: 'cluster', nodes, password, tls };
  }
  if (password !== null) throw new ConfigError(`REDIS_PASSWORD is set but none of ${REDIS_CHOICES.join(', ')} is`);
  return null;
}

/**
 * `host:port,host:port,…`; an entry may start with `redis://` or `rediss://` (TLS), the same for
 * all. Credentials go in REDIS_PASSWORD / REDIS_SENTINEL_PASSWORD, never in the list (which is
 * echoed in errors and logs).
 */
function redisNodes(env: Env, name: string, defaultPort: number): { nodes: RedisNode[]; tls: boolean } {
  const entries = (env[name] ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  const schemes = new Set(entries.map((entry) => (/^rediss:\/\//i.test(entry) ? 'rediss' : 'redis')));
  if (schemes.size > 1) throw new ConfigError(`${name} mixes redis:// and rediss:// entries`);
  const nodes = entries.map((entry) => {
    if (entry.includes('@')) throw new ConfigError(`${name} takes no user or password (use REDIS_PASSWORD or REDIS_SENTINEL_PASSWORD)`);
    let parsed: URL;
    try {
      parsed = new URL(/^rediss?:\/\//i.test(entry) ? entry : `redis://${entry}`);
    } catch {
      throw new ConfigError(`${name} must be host:port entries separated by commas, got "${entry}"`);
    }
    if (parsed.hostname === '' || (parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') {
      throw new ConfigError(`${name} must be host:port entries separated by commas, got "${entry}"`);
    }
    // URL keeps IPv6 hosts in brackets; ioredis wants the bare address.
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    return { host, port: parsed.port === '' ? defaultPort : Number(parsed.port) };
  });
  if (nodes.length === 0) throw new ConfigError(`${name} must be host:port entries separated by commas`);
  return { nodes, tls: schemes.has('rediss') };
}

/**
 * Hash-tagged by default so that every BullMQ key of one deployment lands in one Redis Cluster
 * slot; with REDIS_CLUSTER_NODES a prefix without a tag would spread the queue's keys over the
 * slots and BullMQ's scripts would fail on every job (CROSSSLOT), so it stops the start instead.
 */
function queuePrefix(env: Env): string {
  const prefix = text(env.QUEUE_PREFIX) ?? '{censo}';
  if (text(env.REDIS_CLUSTER_NODES) !== null && !hasHashTag(prefix)) {
    throw new ConfigError(
      `QUEUE_PREFIX must hold a hash tag such as {censo} with REDIS_CLUSTER_NODES (one slot for the whole queue), got "${prefix}"`,
    );
  }
  return prefix;
}

/** Redis hashes only what is between the first `{` and the next `}`, when that is not empty. */
function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  if (open < 0) return false;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1;
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

const SIGN_IN_EXTRAS = [
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'SESSION_SECRET',
  'OIDC_SCOPES',
  'OIDC_ROLES_CLAIM',
  'OIDC_ROLES_RETORNO',
  'OIDC_ROLES_CONSULTA',
] as const;

/** At least 256 bits of a random string's worth of characters. */
const MIN_SESSION_SECRET = 32;

function signIn(env: Env): SignInConfig | null {
  const issuerText = text(env.OIDC_ISSUER);
  if (issuerText === null) {
    for (const name of SIGN_IN_EXTRAS) {
      if (text(env[name]) !== null) throw new ConfigError(`${name} is set but OIDC_ISSUER is not`);
    }
    return null;
  }
  webUrl(issuerText, 'OIDC_ISSUER');
  const clientId = required(env, 'OIDC_CLIENT_ID');
  const publicUrlText = required(env, 'PUBLIC_URL');
  const publicUrl = webUrl(publicUrlText, 'PUBLIC_URL');
  if (publicUrl.search || publicUrl.hash) throw new ConfigError('PUBLIC_URL must have no query or fragment');
  const sessionSecret = required(env, 'SESSION_SECRET');
  if (sessionSecret.length < MIN_SESSION_SECRET) {
    throw new ConfigError(`SESSION_SECRET must be at least ${MIN_SESSION_SECRET} characters (e.g. openssl rand -base64 48)`);
  }
  const scopes = (text(env.OIDC_SCOPES) ?? 'openid profile email').split(/\s+/);
  if (!scopes.includes('openid')) throw new ConfigError('OIDC_SCOPES must include openid');
  const rolesRetorno = keyList(env.OIDC_ROLES_RETORNO);
  const rolesConsulta = keyList(env.OIDC_ROLES_CONSULTA);
  if (rolesRetorno.length === 0 && rolesConsulta.length === 0) {
    throw new ConfigError('OIDC_ISSUER is set but neither OIDC_ROLES_RETORNO nor OIDC_ROLES_CONSULTA is: nobody could be let in');
  }
  return {
    // The issuer exactly as the provider writes it in its tokens: compared as a string.
    issuer: issuerText,
    clientId,
    clientSecret: text(env.OIDC_CLIENT_SECRET),
    publicUrl: publicUrl.href.replace(/\/+$/, ''),
    sessionSecret,
    scopes: [...new Set(scopes)].join(' '),
    rolesClaim: text(env.OIDC_ROLES_CLAIM) ?? 'groups',
    rolesRetorno,
    rolesConsulta,
  };
}

function required(env: Env, name: string): string {
  const value = text(env[name]);
  if (value === null) throw new ConfigError(`${name} is required when OIDC_ISSUER is set`);
  return value;
}

/**
 * An https URL, or http to a loopback address only (a test provider on this machine): tokens and
 * cookies never cross a network in clear text.
 */
function webUrl(raw: string, name: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (parsed.username || parsed.password) throw new ConfigError(`${name} must not hold a user or password`);
  if (parsed.protocol === 'https:') return parsed;
  if (parsed.protocol === 'http:' && isLoopback(parsed.hostname)) return parsed;
  throw new ConfigError(`${name} must start with https:// (http:// only for a loopback address)`);
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

function accessLog(env: Env): string {
  const raw = text(env.ACCESS_LOG) ?? 'stdout';
  return raw === 'stdout' ? raw : path.resolve(raw);
}
