// PostgreSQL for integration tests. Order: DATABASE_URL_FOR_TESTS or DATABASE_URL when set, else a
// throwaway container when a Docker engine answers, else the conventional local server with
// trust auth. 127.0.0.1 rather than `localhost`: Node may resolve localhost to ::1 first, and a
// server listening on IPv4 only would then refuse the connection.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const AUDITS_DDL = fileURLToPath(new URL('../../docker/postgres-init/01-audits.sql', import.meta.url));

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

/** The `audits` table and its recommended indexes, from the compose init script (one definition). */
export async function createAuditsTable(client: pg.Client): Promise<void> {
  await client.query(await readFile(AUDITS_DDL, 'utf8'));
}
