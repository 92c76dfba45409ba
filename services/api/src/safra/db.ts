// The ledger's database: one small interface over `pg` (a pool, shared by every replica) and PGlite
// (an in-process PostgreSQL in a folder, the embedded default), so the ledger runs the same SQL on
// both (SPEC §13).
import { mkdir } from 'node:fs/promises';

export interface Executor {
  query<R extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>;
  /** Several statements without parameters (a migration). */
  exec(sql: string): Promise<void>;
}

export interface SafraDb extends Executor {
  /** `fn` inside BEGIN … COMMIT on one connection (ROLLBACK when it throws). */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** `pg` or `pglite`, for the logs. */
  readonly kind: 'pg' | 'pglite';
}

/** A pool on `url`; the ledger's schema is named in its SQL, so the pool's search_path does not matter. */
export async function pgDb(url: string, max = 4): Promise<SafraDb> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: url, max, application_name: 'censo-api-safra' });
  // An idle client's error (the server restarted) must not end the process: the next query reconnects.
  pool.on('error', () => {});
  return {
    kind: 'pg',
    async query(text, params) {
      return (await pool.query(text, params as unknown[])).rows;
    },
    async exec(sql) {
      await pool.query(sql);
    },
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const value = await fn({
          query: async (text, params) => (await client.query(text, params as unknown[])).rows,
          exec: async (sql) => void (await client.query(sql)),
        });
        await client.query('COMMIT');
        return value;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** PGlite in `dir` (created when missing): a season kept across restarts with no server to run. */
export async function pgliteDb(dir: string): Promise<SafraDb> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(dir);
  return {
    kind: 'pglite',
    async query(text, params) {
      return (await db.query(text, params as unknown[])).rows as never;
    },
    async exec(sql) {
      await db.exec(sql);
    },
    async transaction(fn) {
      return db.transaction(async (tx) =>
        fn({
          query: async (text, params) => (await tx.query(text, params as unknown[])).rows as never,
          exec: async (sql) => void (await tx.exec(sql)),
        }),
      );
    },
    close: () => db.close(),
  };
}

/**
 * A database opened when first used, or at once when `eager` (a season already in its folder):
 * PGlite's first start in a new folder runs initdb (seconds of WebAssembly, ~40 MB on disk), which
 * neither the start nor a process that never records a batch should pay.
 */
export function openingDb(kind: SafraDb['kind'], open: () => Promise<SafraDb>, eager: boolean): SafraDb & { aberto(): boolean } {
  let ready: Promise<SafraDb> | null = null;
  const get = (): Promise<SafraDb> => {
    if (ready === null) {
      ready = open();
      // Seen by whoever queries (and by close); not an unhandled rejection meanwhile.
      ready.catch(() => {});
    }
    return ready;
  };
  if (eager) void get();
  return {
    kind,
    aberto: () => ready !== null,
    query: async (text, params) => (await get()).query(text, params),
    exec: async (sql) => (await get()).exec(sql),
    transaction: async (fn) => (await get()).transaction(fn),
    close: async () => {
      if (ready === null) return;
      const db = await ready.catch(() => null);
      await db?.close();
    },
  };
}
