// The queue mode's store: records in Redis, every key under `<QUEUE_PREFIX>:tarefas:`. The prefix
// is a hash tag (`{censo}`), so all of them share one Redis Cluster slot with the BullMQ queue,
// and the commit script may touch several keys at once. The connection is the one the job runner
// already made (its factory in @censo/shared decides Sentinel, Cluster, TLS): nothing here builds
// a client.
import type { Cluster, Redis } from 'ioredis';
import { QueueUnavailableError } from '@censo/shared';
import type { Guard, RangeQuery, Scored, TarefaStore, Write } from './store.js';

/**
 * KEYS: every key the commit names. ARGV[1]: {"g": [[key index, value or null]...], "w": [[op, ...]...]}.
 * Nothing is written unless every guard holds, and the script runs whole.
 *
 * The guards are read in one MGET and the writes go as few commands as they can (issue 55: "one
 * write where there are two"): the records a commit sets in one MSET, each sorted set's members in
 * one ZADD or ZREM, the deletions in one DEL. A request of 50 returns, or the ends of 50 tasks, were
 * 150 commands inside this script and are now five or six; INFO commandstats counts each.
 * Ops: ["mset", [k, v, k, v...]], ["setpx", k, v, ms], ["del", [k...]], ["zadd", k, [score, member...]],
 * ["zrem", k, [member...]], key indexes into KEYS.
 */
const COMMIT = `
local spec = cjson.decode(ARGV[1])
if #spec.g > 0 then
  local names = {}
  for i, guard in ipairs(spec.g) do names[i] = KEYS[guard[1]] end
  local current = redis.call('MGET', unpack(names))
  for i, guard in ipairs(spec.g) do
    if guard[2] == cjson.null then
      if current[i] then return 0 end
    elseif current[i] ~= guard[2] then
      return 0
    end
  end
end
for _, w in ipairs(spec.w) do
  local op = w[1]
  if op == 'mset' then
    local args = {}
    for i = 1, #w[2], 2 do args[i] = KEYS[w[2][i]]; args[i + 1] = w[2][i + 1] end
    redis.call('MSET', unpack(args))
  elseif op == 'setpx' then
    redis.call('SET', KEYS[w[2]], w[3], 'PX', w[4])
  elseif op == 'del' then
    local args = {}
    for i, k in ipairs(w[2]) do args[i] = KEYS[k] end
    redis.call('DEL', unpack(args))
  elseif op == 'zadd' then
    redis.call('ZADD', KEYS[w[2]], unpack(w[3]))
  elseif op == 'zrem' then
    redis.call('ZREM', KEYS[w[2]], unpack(w[3]))
  end
end
return 1
`;

/** Arguments one coalesced command carries at most (Lua's unpack has a stack of 8,000). */
const MAX_ARGS = 1_000;

type Op =
  | ['mset', (number | string)[]]
  | ['setpx', number, string, number]
  | ['del', number[]]
  | ['zadd', number, string[]]
  | ['zrem', number, string[]];

/**
 * The writes as few commands as give the same result. Writes of one kind to distinct keys commute,
 * so they are merged when no key is written by two kinds (a set and a del of one key, a zadd and a
 * zrem on one sorted set): then their order cannot matter. Otherwise each goes alone, in order.
 */
export function coalesce(writes: readonly Write[], at: (key: string) => number): Op[] {
  const kindOf = new Map<string, string>();
  let mergeable = true;
  for (const write of writes) {
    const kind = write.op === 'set' ? (write.ttlMs === undefined ? 'set' : 'setpx') : write.op;
    const seen = kindOf.get(write.key);
    if (seen !== undefined && seen !== kind) mergeable = false;
    kindOf.set(write.key, kind);
  }
  const out: Op[] = [];
  const chunked = <T>(items: T[], per: number, make: (part: T[]) => Op) => {
    for (let i = 0; i < items.length; i += per) out.push(make(items.slice(i, i + per)));
  };
  if (!mergeable) {
    for (const write of writes) {
      if (write.op === 'set') {
        out.push(write.ttlMs === undefined ? ['mset', [at(write.key), write.value]] : ['setpx', at(write.key), write.value, write.ttlMs]);
      } else if (write.op === 'del') out.push(['del', [at(write.key)]]);
      else if (write.op === 'zadd') out.push(['zadd', at(write.key), [String(write.score), write.member]]);
      else out.push(['zrem', at(write.key), [write.member]]);
    }
    return out;
  }
  const mset: (number | string)[] = [];
  const dels: number[] = [];
  const zadds = new Map<string, string[]>();
  const zrems = new Map<string, string[]>();
  for (const write of writes) {
    switch (write.op) {
      case 'set':
        if (write.ttlMs === undefined) mset.push(at(write.key), write.value);
        else out.push(['setpx', at(write.key), write.value, write.ttlMs]);
        break;
      case 'del':
        dels.push(at(write.key));
        break;
      case 'zadd': {
        const args = zadds.get(write.key) ?? [];
        args.push(String(write.score), write.member);
        zadds.set(write.key, args);
        break;
      }
      case 'zrem': {
        const members = zrems.get(write.key) ?? [];
        members.push(write.member);
        zrems.set(write.key, members);
        break;
      }
    }
  }
  chunked(mset, MAX_ARGS, (part) => ['mset', part]);
  chunked(dels, MAX_ARGS, (part) => ['del', part]);
  for (const [key, args] of zadds) chunked(args, MAX_ARGS, (part) => ['zadd', at(key), part]);
  for (const [key, members] of zrems) chunked(members, MAX_ARGS, (part) => ['zrem', at(key), part]);
  return out;
}

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
      const spec = { g: guards.map((guard) => [at(guard.key), guard.value]), w: coalesce(writes, at) };
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
