// Issue 59: with CLIENT LIST denied to the service user by the Redis ACL, the API fell back to a
// job per task and logged that the queue was unavailable. It now says once what to allow.
import { describe, expect, it } from 'vitest';
import { createGroupHandshake } from '../../services/api/dist/jobs/group-handshake.js';

function handshake(getWorkers: () => Promise<unknown[]>) {
  const lines: Array<[string, string]> = [];
  const log = {
    warn: (_obj: object, msg: string) => lines.push(['warn', msg]),
    info: (_obj: object, msg: string) => lines.push(['info', msg]),
    error: (_obj: object, msg: string) => lines.push(['error', msg]),
    debug: () => undefined,
  };
  const made = createGroupHandshake({
    queue: { getWorkers } as never,
    client: { defineCommand: () => undefined, zrangebyscore: async () => [] } as never,
    prefix: 'teste-noperm',
    groupSize: 50,
    log: log as never,
    redis: (work) => work(),
  });
  return { made, lines };
}

describe('the contract handshake without CLIENT LIST', () => {
  it('queues a job per task and says once that the Redis user may not run CLIENT LIST', async () => {
    const { made, lines } = handshake(() =>
      Promise.reject(new Error("NOPERM User censo has no permissions to run the 'client|list' command")),
    );
    expect(await made.groupSizeNow()).toBe(1);
    expect(await made.groupSizeNow()).toBe(1);
    expect(lines).toEqual([
      ['warn', 'group jobs off: a job per task; the Redis user may not run CLIENT LIST (allow +client|list, docs/operacao.md)'],
    ]);
  });

  it('a Redis that is away is still a redis error, not an ACL one', async () => {
    const { made, lines } = handshake(() => Promise.reject(new Error('Connection is closed.')));
    expect(await made.groupSizeNow()).toBe(1);
    expect(lines).toEqual([['warn', 'redis error']]);
  });
});
