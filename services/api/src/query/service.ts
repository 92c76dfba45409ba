// Runs the declared queries against the secretariat's PostgreSQL (SPEC §3.3): the pg Pool, JSON
// pages and the CSV walk; the SQL of a page is page-sql.ts, the error mapping pg-errors.ts. Owns the pg Pool:
// one statement per page, always a keyset seek on the query's key with bound values, so the cost
// of page N does not depend on N, and CSV export is the same seek repeated (each page its own
// short statement under statement_timeout, no transaction or portal held while a slow client
// reads; see docs/query.md).
import { Readable } from 'node:stream';
import pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError, csvLine, withTimeout, type Config } from '@censo/shared';
import { loadCatalog, BUILTIN_QUERIES_DIR, type Catalog, type CompiledQuery } from './catalog.js';
import { encodeCursor, invalidCursor } from './cursor.js';
import { checkDeclarations, QueryMisdeclaredError } from './declaration-check.js';
import { buildPageSql, keyIndexes } from './page-sql.js';
import { parseQueryRequest, type QueryRequest } from './params.js';
import { isDataException, translateError } from './pg-errors.js';

export type QueryLogger = Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;

export type RunRequest = Extract<QueryRequest, { kind: 'run' }>;

/** Every value is the server's text (or null): see TEXT_TYPES. */
export type Row = readonly (string | null)[];

/** One row of a JSON page: keyed by column name, keys in `columns` order (SPEC §3.3). */
export type RowObject = Readonly<Record<string, string | null>>;

/** The 200 body of a JSON page (SPEC §3.3). */
export interface QueryPage {
  readonly query: string;
  readonly count: number;
  readonly next_cursor: string | null;
  readonly columns: readonly string[];
  readonly rows: readonly RowObject[];
}

/** The 200 body of `GET /api/query` without parameters. */
export interface QueryListing {
  readonly queries: readonly {
    readonly name: string;
    readonly description: string;
    readonly titulo?: string;
    readonly descricao?: string;
    readonly columns: readonly string[];
    readonly filters: readonly {
      readonly name: string;
      readonly type: string;
      readonly required: boolean;
      readonly description?: string;
      readonly titulo?: string;
      readonly descricao?: string;
    }[];
  }[];
}

export interface QueryService {
  readonly catalog: Catalog;
  /** The declared queries and their filters. */
  describe(): QueryListing;
  /** Strict validation of the query string; throws BadInputError (400). */
  parse(raw: Readonly<Record<string, unknown>>): QueryRequest;
  /** One JSON page. Throws QueryTimeoutError (504) or DatabaseUnavailableError (503). */
  page(request: RunRequest): Promise<QueryPage>;
  /**
   * Every matching row as CSV. The first page is fetched before this resolves, so a timeout or an
   * unreachable database is still a proper 504/503; later failures can only abort the stream.
   * Destroying the stream (client gone) stops the walk after the page in flight.
   * `onEnd` gets the number of rows delivered once the walk stops (request log and metrics).
   */
  csv(request: RunRequest, log: QueryLogger, onEnd?: (rows: number) => void): Promise<Readable>;
  /** For /readyz: PostgreSQL answers `SELECT 1` within a short time. */
  isReady(): Promise<boolean>;
  close(): Promise<void>;
}

export interface QueryServiceOptions {
  /** Rows per internal page of a CSV export. */
  readonly csvPageSize?: number;
  /** Folder of the built-in declarations (tests). */
  readonly builtinDir?: URL;
}

/**
 * Every column arrives as the text PostgreSQL sends, never parsed into JS numbers or Dates: a
 * bigint or numeric keeps all its digits, and a timestamp key keeps its microseconds, so a cursor
 * made from it seeks exactly after the last row (no row skipped or repeated across pages).
 */
const TEXT_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

const READY_TIMEOUT_MS = 2000;

/** How long the start waits for the declarations to be checked against the database. */
const START_CHECK_MS = 5000;

export async function createQueryService(config: Config, log: QueryLogger, options: QueryServiceOptions = {}): Promise<QueryService> {
  if (config.databaseUrl === null) throw new Error('createQueryService needs DATABASE_URL');
  // Loaded (and validated) before the pool exists: a bad QUERIES_FILE stops the process at start.
  const catalog = await loadCatalog(config.queriesFile, options.builtinDir ?? BUILTIN_QUERIES_DIR);
  const csvPageSize = options.csvPageSize ?? 5000;

  const pool = new pg.Pool({
    ...withReadOnlySession(config.databaseUrl),
    max: config.databasePoolMax,
    // Enforced by the server, so a runaway statement stops there too (SQLSTATE 57014 → 504).
    statement_timeout: config.queryTimeoutMs,
    // Safety net for a server that stops answering altogether, where statement_timeout cannot fire.
    query_timeout: config.queryTimeoutMs + 5000,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    application_name: 'censo-api',
  });
  // An idle client can fail (server restart, network): pg emits it on the pool, and an unhandled
  // 'error' event would crash the process. The pool already dropped that client.
  pool.on('error', (err) => log.warn({ err }, 'idle PostgreSQL connection failed'));

  // Each declaration is checked against the database once (declaration-check.ts): at start when
  // the database answers, else as soon as the pool first connects (a request, /readyz). Until
  // the check has run no query is served (the database is unreachable then anyway); a query it
  // refuses is logged, left out of the listing and answers 503 QueryMisdeclaredError.
  const misdeclared = new Map<string, string>();
  let starting = true;
  let checked = false;
  let checking: Promise<void> | null = null;
  const checkAgainstDatabase = (): Promise<void> =>
    (checking ??= checkDeclarations(catalog, async (text, values) => {
      const result = await pool.query({ text, values: [...values], rowMode: 'array', types: TEXT_TYPES });
      return result.fields.map((field) => field.name);
    }).then(
      (problems) => {
        checked = true;
        for (const [name, problem] of problems) {
          misdeclared.set(name, problem);
          // At start the problems stop the process instead (below).
          if (!starting) {
            log.error(
              { query: name, source: catalog.get(name)!.source, problem },
              'query declaration does not match the database; the query is refused',
            );
          }
        }
      },
      (err: unknown) => {
        // Unreachable or too slow: nothing is known, the next connection tries again.
        checking = null;
        throw err;
      },
    ));
  pool.on('connect', () => {
    if (!checked) checkAgainstDatabase().catch(() => {});
  });

  const checkedAtStart = await withTimeout(checkAgainstDatabase(), START_CHECK_MS).then(
    () => true,
    () => false,
  );
  starting = false;
  if (checkedAtStart && misdeclared.size > 0) {
    // The database answered at start: a declaration that does not match it is a setting error.
    await pool.end();
    throw new ConfigError(
      [...misdeclared].map(([name, problem]) => `${catalog.get(name)!.source}: query "${name}": ${problem}`).join('; '),
    );
  }
  if (!checkedAtStart) log.warn('PostgreSQL did not answer at start: the query declarations are checked once it does');

  /** The query, once its declaration is known to match the database. */
  async function usable(query: CompiledQuery): Promise<void> {
    if (!checked) {
      try {
        await checkAgainstDatabase();
      } catch (err) {
        throw translateError(err);
      }
    }
    if (misdeclared.has(query.name)) throw new QueryMisdeclaredError(query.name);
  }
  async function fetch(
    query: CompiledQuery,
    filters: ReadonlyMap<string, string>,
    after: readonly string[] | null,
    limit: number,
  ): Promise<Row[]> {
    const { text, values } = buildPageSql(query, filters, after, limit);
    try {
      // pool.query releases the client with the error, which discards it: a connection whose
      // statement timed out or failed is not handed to the next request.
      const result = await pool.query<(string | null)[]>({ text, values, rowMode: 'array', types: TEXT_TYPES });
      return result.rows;
    } catch (err) {
      // Filters are validated by type before they reach SQL; a signed cursor is not (its keys are
      // whatever the key columns held, and the declaration does not say their types). A data
      // exception (SQLSTATE class 22: `abc` or `1e5` for a bigint key) with a cursor is the cursor's.
      if (after !== null && isDataException(err)) throw invalidCursor();
      throw translateError(err);
    }
  }

  function keyOf(query: CompiledQuery, row: Row): string[] {
    return keyIndexes(query).map((index) => {
      const value = row[index];
      // A NULL key cannot be sought past: the declaration is wrong (docs/query.md), not the request.
      if (value === null || value === undefined) throw new Error(`query ${query.name}: key column is NULL`);
      return value;
    });
  }

  let closed = false;
  return {
    catalog,

    describe: () => describeCatalog(catalog, misdeclared),

    parse: (raw) => parseQueryRequest(catalog, raw, config.cursorSecret),

    async page(request) {
      const { query, filters, after, limit } = request;
      await usable(query);
      const rows = await fetch(query, filters, after, limit + 1);
      const more = rows.length > limit;
      const page = more ? rows.slice(0, limit) : rows;
      return {
        query: query.name,
        count: page.length,
        next_cursor: more ? encodeCursor(config.cursorSecret, query.name, filters, keyOf(query, page[page.length - 1]!)) : null,
        columns: query.columns,
        rows: page.map((row) => rowObject(query.columns, row)),
      };
    },

    async csv(request, requestLog, onEnd) {
      const { query, filters } = request;
      await usable(query);
      const width = query.columns.length;
      const first = await fetch(query, filters, request.after, csvPageSize + 1);
      async function* lines(): AsyncGenerator<string> {
        let rows = first;
        let delivered = 0;
        let complete = false;
        try {
          yield csvLine(query.columns);
          for (;;) {
            const more = rows.length > csvPageSize;
            const page = more ? rows.slice(0, csvPageSize) : rows;
            // One chunk per page: memory stays at one page whatever the total row count.
            if (page.length > 0) yield page.map((row) => csvLine(row.slice(0, width))).join('');
            delivered += page.length;
            if (!more) {
              complete = true;
              return;
            }
            rows = await fetch(query, filters, keyOf(query, page[page.length - 1]!), csvPageSize + 1);
          }
        } finally {
          // Reached on completion, on error, and when the response stream is destroyed because the
          // client went away (no further page is fetched then).
          requestLog.info({ query: query.name, rows: delivered, complete }, 'csv export ended');
          onEnd?.(delivered);
        }
      }
      // Byte mode with a small high-water mark: the next page is fetched only once the previous
      // one has drained towards the socket (backpressure).
      return Readable.from(lines(), { objectMode: false, highWaterMark: 64 * 1024 });
    },

    async isReady() {
      if (closed) return false;
      return withTimeout(pool.query('SELECT 1'), READY_TIMEOUT_MS).then(
        () => true,
        () => false,
      );
    },

    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}

/**
 * Defence in depth next to a read-only role (docs/query.md): every session starts with
 * `default_transaction_read_only = on`, sent as a startup option (no extra round trip). A URL's
 * own `options` (e.g. `-c search_path=…`) would replace ours, so the two are merged.
 */
function withReadOnlySession(databaseUrl: string): { connectionString: string; options: string } {
  const readOnly = '-c default_transaction_read_only=on';
  const url = new URL(databaseUrl);
  const own = url.searchParams.get('options');
  if (own === null) return { connectionString: databaseUrl, options: readOnly };
  url.searchParams.delete('options');
  return { connectionString: url.href, options: `${own} ${readOnly}` };
}

/** The queries that can be run: a declaration refused by the database check is left out. */
function describeCatalog(catalog: Catalog, misdeclared: ReadonlyMap<string, string>): QueryListing {
  return {
    queries: [...catalog.values()]
      .filter((query) => !misdeclared.has(query.name))
      .map((query) => ({
        name: query.name,
        description: query.description,
        ...(query.titulo === undefined ? {} : { titulo: query.titulo }),
        ...(query.descricao === undefined ? {} : { descricao: query.descricao }),
        columns: query.columns,
        filters: query.filters.map((filter) => ({
          name: filter.name,
          type: filter.type,
          required: filter.required,
          ...(filter.description === undefined ? {} : { description: filter.description }),
          ...(filter.titulo === undefined ? {} : { titulo: filter.titulo }),
          ...(filter.descricao === undefined ? {} : { descricao: filter.descricao }),
        })),
      })),
  };
}

/**
 * A row keyed by its columns. Built property by property in `columns` order, which is the order
 * JSON.stringify writes them; a declared name such as `__proto__` becomes a plain own property.
 */
function rowObject(columns: readonly string[], row: Row): RowObject {
  const object: Record<string, string | null> = Object.create(null) as Record<string, string | null>;
  for (let i = 0; i < columns.length; i++) object[columns[i]!] = row[i] ?? null;
  return object;
}
