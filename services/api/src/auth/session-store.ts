// Where staff sessions live (SPEC §8): Redis in queue mode, so every API replica knows every
// session, and the process otherwise. Records are opaque strings with a time to live; the keys are
// HMACs of the cookie values (sessions.ts), never the values themselves. Only a completed sign-in
// writes here: nothing an anonymous request sends can fill the store.
import type { Cluster, Redis } from 'ioredis';
import { SessionsUnavailableError } from '@censo/shared';

export interface SessionStore {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** A new time to live for a record that still exists; never brings a deleted one back. */
  refresh(key: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

interface Entry {
  readonly value: string;
  expiresAt: number;
}

/** Expired entries are dropped when read and swept this often, so memory follows live sessions. */
const SWEEP_MS = 60_000;

export function createMemorySessionStore(now: () => number = Date.now): SessionStore {
  const entries = new Map<string, Entry>();
  const live = (key: string): Entry | null => {
    const entry = entries.get(key);
    if (!entry) return null;
    if (entry.expiresAt > now()) return entry;
    entries.delete(key);
    return null;
  };
  const sweep = setInterval(() => {
    for (const key of entries.keys()) live(key);
  }, SWEEP_MS).unref();
  return {
    async get(key) {
      return live(key)?.value ?? null;
    },
    async set(key, value, ttlMs) {
      entries.set(key, { value, expiresAt: now() + ttlMs });
    },
    async refresh(key, ttlMs) {
      const entry = live(key);
      if (entry) entry.expiresAt = now() + ttlMs;
    },
    async delete(key) {
      entries.delete(key);
    },
    async close() {
      clearInterval(sweep);
      entries.clear();
    },
  };
}

/**
 * Keys under the queue prefix, a Redis Cluster hash tag, so they live beside the queue's own and a
 * shared Redis keeps deployments apart; single-key commands only, valid on a cluster. The client is
 * the caller's (a fail-fast connection): an outage is a 503 at once, not a request held waiting.
 */
export function createRedisSessionStore(redis: Redis | Cluster, prefix: string): SessionStore {
  const full = (key: string) => `${prefix}:sessao:${key}`;
  const unavailable = (err: unknown): never => {
    throw new SessionsUnavailableError({ cause: err });
  };
  return {
    async get(key) {
      return redis.get(full(key)).catch(unavailable);
    },
    async set(key, value, ttlMs) {
      await redis.set(full(key), value, 'PX', Math.max(1, Math.ceil(ttlMs))).catch(unavailable);
    },
    async refresh(key, ttlMs) {
      await redis.pexpire(full(key), Math.max(1, Math.ceil(ttlMs))).catch(unavailable);
    },
    async delete(key) {
      await redis.del(full(key)).catch(unavailable);
    },
    async close() {
      redis.disconnect();
    },
  };
}
