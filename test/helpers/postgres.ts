// PostgreSQL for integration tests: DATABASE_URL_FOR_TESTS or DATABASE_URL when set, else a
// container, else the local server with trust auth (test-service.ts).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { resolveTestService, type TestService } from './test-service.js';

const AUDITS_DDL = fileURLToPath(new URL('../../docker/postgres-init/01-audits.sql', import.meta.url));

export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export type TestPostgres = TestService;

export function startTestPostgres(): Promise<TestPostgres> {
  return resolveTestService({
    fromEnv: process.env.DATABASE_URL_FOR_TESTS ?? process.env.DATABASE_URL,
    container: async () => {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer('postgres:16-alpine').start();
      return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
    },
    localUrl: LOCAL_DATABASE_URL,
  });
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

/** A database of the test's own on the local server, and how to drop it (whatever still holds it open). */
export interface ScratchDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/** Creates `<prefix>_<random>` beside `test` on the local server: the season ledger's tests each own one. */
export async function createScratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: LOCAL_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  return {
    url: LOCAL_DATABASE_URL.replace(/\/test$/, `/${name}`),
    async drop() {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
