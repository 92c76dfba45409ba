// PostgreSQL for integration tests. Order: DATABASE_URL_FOR_TESTS or DATABASE_URL when set, else a
// throwaway container when a Docker engine answers, else the conventional local server with
// trust auth. 127.0.0.1 rather than `localhost`: Node may resolve localhost to ::1 first, and a
// server listening on IPv4 only would then refuse the connection.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import pg from 'pg';

export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface TestPostgres {
  readonly url: string;
  stop(): Promise<void>;
}

function dockerAvailable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const fromEnv = (process.env.DATABASE_URL_FOR_TESTS ?? process.env.DATABASE_URL)?.trim();
  if (fromEnv) return { url: fromEnv, stop: async () => undefined };
  if (dockerAvailable()) {
    try {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer('postgres:16-alpine').start();
      return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
    } catch {
      // No usable engine after all (socket present, daemon down): fall back to the local server.
    }
  }
  return { url: LOCAL_DATABASE_URL, stop: async () => undefined };
}

export interface TestSchema {
  readonly name: string;
  /** The server URL with `search_path` set to this schema, for the service under test. */
  readonly url: string;
  /** An admin connection whose search_path is this schema, to create and check data. */
  readonly admin: pg.Client;
  drop(): Promise<void>;
}

/**
 * A schema of its own per test file (`q_<random>`), so files running in parallel never share a
 * table; dropped with everything in it afterwards.
 */
export async function createTestSchema(serverUrl: string): Promise<TestSchema> {
  const name = `q_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  await admin.query(`SET search_path = ${name}`);
  const url = new URL(serverUrl);
  url.searchParams.set('options', `-c search_path=${name}`);
  return {
    name,
    url: url.href,
    admin,
    async drop() {
      try {
        await admin.query(`DROP SCHEMA ${name} CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}

/**
 * The `audits` table as the Rails `audited` gem creates it (timestamp(6), as Rails 7 does), with
 * a recommended index from docs/query.md.
 */
export async function createAuditsTable(client: pg.Client): Promise<void> {
  await client.query(`
    CREATE TABLE audits (
      id bigserial PRIMARY KEY,
      auditable_id bigint,
      auditable_type varchar,
      associated_id bigint,
      associated_type varchar,
      user_id bigint,
      user_type varchar,
      username varchar,
      action varchar,
      audited_changes jsonb,
      version integer DEFAULT 0,
      comment varchar,
      remote_address varchar,
      request_uuid varchar,
      created_at timestamp(6)
    )`);
  await client.query('CREATE INDEX audits_created_at_id ON audits (created_at, id)');
  await client.query('CREATE INDEX audits_user_id_id ON audits (user_id, id)');
}
