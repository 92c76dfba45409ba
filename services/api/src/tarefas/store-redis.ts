// The queue mode's store: records in Redis, every key under `<QUEUE_PREFIX>:tarefas:`. The prefix
// is a hash tag (`{censo}`), so all of them share one Redis Cluster slot with the BullMQ queue,
// and the commit script may touch several keys at once. The connection is the one the job runner
// already made (its factory in @censo/shared decides Sentinel, Cluster, TLS): nothing here builds
// a client.
import type { Cluster, Redis } from 'ioredis';
import { QueueUnavailableError } from '@censo/shared';
import type { Guard, RangeQuery, Scored, TarefaStore, Write } from './store.js';

/**
 * KEYS: every key the commit names. ARGV[1]: {"g": [[key index, value or null]...], "w": [[op,
 * key index, ...]...]}. Nothing is written unless every guard holds, and the script runs whole.
 */
const COMMIT = `
local spec = cjson.decode(ARGV[1])
for _, guard in ipairs(spec.g) do
  local current = redis.call('GET', KEYS[guard[1]])
  if guard[2] == cjson.null then
    if current then return 0 end
  elseif current ~= guard[2] then
    return 0
  end
end
for _, w in ipairs(spec.w) do
  local key = KEYS[w[2]]
  if w[1] == 'set' then
    if w[4] then redis.call('SET', key, w[3], 'PX', w[4]) else redis.call('SET', key, w[3]) end
  elseif w[1] == 'del' then
    redis.call('DEL', key)
  elseif w[1] == 'zadd' then
    redis.call('ZADD', key, w[4], w[3])
  elseif w[1] == 'zrem' then
    redis.call('ZREM', key, w[3])
  end
end
return 1
`;

type Client = (Redis | Cluster) & {
  censoTarefasCommit?: (...args: (string | number)[]) => Promise<number>;
};

export function createRedisStore(redis: Redis | Cluster, queuePrefix: string): TarefaStore {
  const client = redis as Client;
  if (!client.censoTarefasCommit) client.defineCommand('censoTarefasCommit', { lua: COMMIT });
  const commit = client.censoTarefasCommit!.bind(client);
  const ns = `${queuePrefix}:tarefas:`;
  const full = (key: string) => ns + key;

  const store: TarefaStore = {
    kind: 'redis',
    async get(key) {
      return client.get(full(key));
    },
    async getMany(keys) {
      if (keys.length === 0) return [];
      return client.mget(keys.map(full));
    },
    async commit(guards: readonly Guard[], writes: readonly Write[]) {
      const names: string[] = [];
      const index = new Map<string, number>();
      const at = (key: string): number => {
        let i = index.get(key);
        if (i === undefined) {
          names.push(full(key));
          index.set(key, (i = names.length));
        }
        return i;
      };
      const spec = {
        g: guards.map((guard) => [at(guard.key), guard.value]),
        w: writes.map((write) => {
          switch (write.op) {
            case 'set':
              return write.ttlMs === undefined ? ['set', at(write.key), write.value] : ['set', at(write.key), write.value, write.ttlMs];
            case 'del':
              return ['del', at(write.key)];
            case 'zadd':
              return ['zadd', at(write.key), write.member, String(write.score)];
            case 'zrem':
              return ['zrem', at(write.key), write.member];
          }
        }),
      };
      return (await commit(names.length, ...names, JSON.stringify(spec))) === 1;
    },
    async range(key, { after, from, upTo, limit }: RangeQuery): Promise<Scored[]> {
      // Both bounds may be given (the contract suite holds the memory store to the same): the tighter one wins.
      const exclusive = after !== undefined && after !== -Infinity && (from === undefined || after >= from);
      const min = exclusive ? `(${after}` : from !== undefined ? String(from) : '-inf';
      const max = upTo === undefined || upTo === Infinity ? '+inf' : String(upTo);
      const flat = await client.zrangebyscore(full(key), min, max, 'WITHSCORES', 'LIMIT', 0, limit);
      const out: Scored[] = [];
      for (let i = 0; i < flat.length; i += 2) out.push({ member: flat[i]!, score: Number(flat[i + 1]) });
      return out;
    },
    async count(key) {
      return client.zcard(full(key));
    },
  };
  // Redis away (the connection fails fast, never queues): the request's 503, as for the queue.
  const unavailable = (err: unknown): never => {
    throw new QueueUnavailableError({ cause: err });
  };
  return {
    kind: 'redis',
    get: (key) => store.get(key).catch(unavailable),
    getMany: (keys) => store.getMany(keys).catch(unavailable),
    commit: (guards, writes) => store.commit(guards, writes).catch(unavailable),
    range: (key, query) => store.range(key, query).catch(unavailable),
    count: (key) => store.count(key).catch(unavailable),
  };
}
