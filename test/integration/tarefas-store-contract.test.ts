// Issue 49: one contract for the store of tasks and batches (services/api/src/tarefas/store.ts),
// run against both adapters. Every rule of service.ts is read-compute-commit on this port, so
// embedded mode (the memory store) and queue mode (Redis, a Lua script) must give the same answers:
// the same reads, the same guarded commits, the same sorted-set pages, the same expiry.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryStore, createRedisStore, type TarefaStore } from '@censo/api/testing';
import { deleteKeys, uniqueQueuePrefix, useTestRedis } from '../helpers/redis.js';

const testRedis = useTestRedis();
let redis: Redis;
const prefixes: string[] = [];

beforeAll(() => {
  redis = new Redis(testRedis.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  for (const prefix of prefixes) await deleteKeys(testRedis.url, prefix);
  redis.disconnect();
});

const adapters: [string, () => TarefaStore][] = [
  ['memory', () => createMemoryStore()],
  [
    'redis',
    () => {
      const prefix = uniqueQueuePrefix();
      prefixes.push(prefix);
      return createRedisStore(redis, prefix);
    },
  ],
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(adapters)('the tasks store, %s adapter', (kind, make) => {
  it('says which adapter it is', () => {
    expect(make().kind).toBe(kind);
  });

  it('reads null for a key never written, and a value once committed', async () => {
    const store = make();
    expect(await store.get('tarefa:a')).toBeNull();
    expect(await store.commit([], [{ op: 'set', key: 'tarefa:a', value: '{"x":1}' }])).toBe(true);
    expect(await store.get('tarefa:a')).toBe('{"x":1}');
  });

  it('reads many keys in the order asked, null where absent; none for an empty list', async () => {
    const store = make();
    await store.commit(
      [],
      [
        { op: 'set', key: 'k1', value: 'um' },
        { op: 'set', key: 'k3', value: 'três' },
      ],
    );
    expect(await store.getMany(['k3', 'k2', 'k1', 'k3'])).toEqual(['três', null, 'um', 'três']);
    expect(await store.getMany([])).toEqual([]);
  });

  it('applies a commit only while every guard holds, and then all of its writes', async () => {
    const store = make();
    // A null guard: the key must be absent.
    expect(await store.commit([{ key: 'lote:1', value: null }], [{ op: 'set', key: 'lote:1', value: 'v1' }])).toBe(true);
    expect(await store.commit([{ key: 'lote:1', value: null }], [{ op: 'set', key: 'lote:1', value: 'outro' }])).toBe(false);
    expect(await store.get('lote:1')).toBe('v1');

    // A stale guard writes nothing, not even to other keys or sets.
    const writes = [
      { op: 'set', key: 'lote:1', value: 'v2' },
      { op: 'set', key: 'tarefa:9', value: 't' },
      { op: 'zadd', key: 'pendentes', member: '9', score: 1 },
    ] as const;
    expect(await store.commit([{ key: 'lote:1', value: 'v0' }], writes)).toBe(false);
    expect(await store.getMany(['lote:1', 'tarefa:9'])).toEqual(['v1', null]);
    expect(await store.count('pendentes')).toBe(0);

    // Every guard must hold: one stale among good ones is enough to refuse.
    await store.commit([], [{ op: 'set', key: 'outra', value: 'o' }]);
    expect(
      await store.commit(
        [
          { key: 'lote:1', value: 'v1' },
          { key: 'outra', value: 'velha' },
        ],
        writes,
      ),
    ).toBe(false);
    expect(await store.get('lote:1')).toBe('v1');

    expect(
      await store.commit(
        [
          { key: 'lote:1', value: 'v1' },
          { key: 'outra', value: 'o' },
        ],
        writes,
      ),
    ).toBe(true);
    expect(await store.getMany(['lote:1', 'tarefa:9'])).toEqual(['v2', 't']);
    expect(await store.range('pendentes', { limit: 10 })).toEqual([{ member: '9', score: 1 }]);
  });

  it("applies a commit's writes in order: a key set and deleted in one commit is gone", async () => {
    const store = make();
    expect(
      await store.commit(
        [],
        [
          { op: 'set', key: 'k', value: '1' },
          { op: 'del', key: 'k' },
          { op: 'set', key: 'j', value: '1' },
          { op: 'set', key: 'j', value: '2' },
        ],
      ),
    ).toBe(true);
    expect(await store.getMany(['k', 'j'])).toEqual([null, '2']);
  });

  it('of many commits guarded on the same value at once, exactly one wins', async () => {
    const store = make();
    await store.commit([], [{ op: 'set', key: 'lote:c', value: '0' }]);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.commit([{ key: 'lote:c', value: '0' }], [{ op: 'set', key: 'lote:c', value: String(i + 1) }]),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.get('lote:c')).toBe(String(results.indexOf(true) + 1));
  });

  it('orders a sorted set by score, then by member, and pages it by after, from, upTo and limit', async () => {
    const store = make();
    const members: [string, number][] = [
      ['e', 5],
      ['b', 2],
      ['c2', 3],
      ['c1', 3],
      ['a', -1.5],
      ['d', 4],
    ];
    await store.commit(
      [],
      members.map(([member, score]) => ({ op: 'zadd', key: 'expiram', member, score }) as const),
    );
    const all = [
      { member: 'a', score: -1.5 },
      { member: 'b', score: 2 },
      { member: 'c1', score: 3 },
      { member: 'c2', score: 3 },
      { member: 'd', score: 4 },
      { member: 'e', score: 5 },
    ];
    expect(await store.range('expiram', { limit: 100 })).toEqual(all);
    expect(await store.range('expiram', { limit: 2 })).toEqual(all.slice(0, 2));
    // after: strictly above (a keyset cursor).
    expect(await store.range('expiram', { after: 2, limit: 100 })).toEqual(all.slice(2));
    expect(await store.range('expiram', { after: 3, limit: 100 })).toEqual(all.slice(4));
    // from: inclusive (ties at the cursor's score are the caller's to skip).
    expect(await store.range('expiram', { from: 3, limit: 100 })).toEqual(all.slice(2));
    // upTo: inclusive.
    expect(await store.range('expiram', { upTo: 3, limit: 100 })).toEqual(all.slice(0, 4));
    expect(await store.range('expiram', { after: 2, upTo: 4, limit: 2 })).toEqual(all.slice(2, 4));
    // Both lower bounds: the tighter one.
    expect(await store.range('expiram', { from: 2, after: 3, limit: 100 })).toEqual(all.slice(4));
    expect(await store.range('expiram', { from: 3, after: 2, limit: 100 })).toEqual(all.slice(2));
    expect(await store.range('expiram', { from: 3, after: 3, limit: 100 })).toEqual(all.slice(4));
    expect(await store.range('expiram', { after: -Infinity, upTo: Infinity, limit: 100 })).toEqual(all);
    expect(await store.range('nenhum', { limit: 100 })).toEqual([]);
    expect(await store.count('expiram')).toBe(6);
    expect(await store.count('nenhum')).toBe(0);
  });

  it('moves a member re-added with a new score, and removes members and whole sets', async () => {
    const store = make();
    await store.commit(
      [],
      [
        { op: 'zadd', key: 'abertos', member: 'x', score: 1 },
        { op: 'zadd', key: 'abertos', member: 'y', score: 2 },
        { op: 'zadd', key: 'abertos', member: 'x', score: 3 },
      ],
    );
    expect(await store.range('abertos', { limit: 10 })).toEqual([
      { member: 'y', score: 2 },
      { member: 'x', score: 3 },
    ]);
    await store.commit([], [{ op: 'zrem', key: 'abertos', member: 'y' }]);
    await store.commit([], [{ op: 'zrem', key: 'abertos', member: 'nunca' }]);
    expect(await store.range('abertos', { limit: 10 })).toEqual([{ member: 'x', score: 3 }]);
    await store.commit([], [{ op: 'del', key: 'abertos' }]);
    expect(await store.count('abertos')).toBe(0);
    expect(await store.range('abertos', { limit: 10 })).toEqual([]);
  });

  it('forgets a value written with a lifetime once it is over, and a guard then sees it absent', async () => {
    const store = make();
    await store.commit(
      [],
      [
        { op: 'set', key: 'idem:a:1', value: 'curta', ttlMs: 150 },
        { op: 'set', key: 'idem:a:2', value: 'longa', ttlMs: 60_000 },
      ],
    );
    expect(await store.getMany(['idem:a:1', 'idem:a:2'])).toEqual(['curta', 'longa']);
    await sleep(400);
    expect(await store.getMany(['idem:a:1', 'idem:a:2'])).toEqual([null, 'longa']);
    expect(await store.commit([{ key: 'idem:a:1', value: null }], [{ op: 'set', key: 'idem:a:1', value: 'nova' }])).toBe(true);
    expect(await store.get('idem:a:1')).toBe('nova');
  });

  it('keeps text as written: accents, quotes, JSON and an empty string', async () => {
    const store = make();
    const values = ['ação "com" aspas', '{"nome":"JOÃO D\'ÁVILA","n":[1,2]}', '', '\u0000 \n \t'];
    await store.commit(
      [],
      values.map((value, i) => ({ op: 'set', key: `v${i}`, value }) as const),
    );
    expect(await store.getMany(values.map((_, i) => `v${i}`))).toEqual(values);
    expect(await store.commit([{ key: 'v2', value: '' }], [{ op: 'del', key: 'v2' }])).toBe(true);
    expect(await store.get('v2')).toBeNull();
  });
});
