// The prelude of the files that drive the real task queue by hand (the group jobs, the workers'
// contract handshake): the test Redis, one client on it that fails a command rather than waiting
// (a test fails, never hangs), and the `basico` case's return as JSON bytes, the batch's entry.
import { readFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { fixtureCases } from './fixtures.js';
import { useTestRedis } from './redis.js';

export interface QueuePrelude {
  /** The test Redis, as the APIs and workers are given it. */
  readonly url: string;
  /** A client on it, for reading and writing the queue's keys directly. */
  readonly redis: Redis;
  /** `basico`'s return (test/fixtures/basico), as a JSON file's bytes. */
  readonly json: Buffer;
}

/** Call at a test file's top level: the hooks start and stop everything with the file. */
export function useQueuePrelude(): QueuePrelude {
  const server = useTestRedis();
  const basico = fixtureCases().find((c) => c.name === 'basico')!;
  let redis: Redis | undefined;
  let json: Buffer | undefined;
  beforeAll(async () => {
    json = await readFile(basico.retorno.json!);
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(() => redis?.disconnect());
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the queue prelude is not ready yet (use it inside a test or hook)');
    return value;
  };
  return {
    get url() {
      return server.url;
    },
    get redis() {
      return ready(redis);
    },
    get json() {
      return ready(json);
    },
  };
}
