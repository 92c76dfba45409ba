// Sharded queues (issue 55, QUEUE_SHARDS). One queue lives in one Redis Cluster hash slot, so one
// master carries every command of every job: past about a Redis core (SPEC §12) that master is the
// limit. With N shards the jobs go on N copies of the queue, each under a prefix of its own whose
// hash tag puts it in a slot of its own (and so, spread by the cluster, on a master of its own):
// its groups, its ends streams, its cancellations and its contract announcements with it, so every
// script still touches one slot. What is not a job's stays on shard 0, whose prefix is QUEUE_PREFIX
// itself: the tasks' and batches' records, sessions, rate-limit counters. A deployment of one shard
// is the deployment as it was, key for key.
//
// A task's job is routed by its key (a group job's id, or the task's own id): any API finds the
// shard of a task it did not queue from the task's record alone. A synchronous request's job goes
// to a shard the API draws (services/api/src/jobs/shard-choice.ts): only that API waits on it.
// Every worker takes from every shard.

/** Most shards a deployment may have (QUEUE_SHARDS): a worker holds a Redis connection or two per shard. */
export const MAX_QUEUE_SHARDS = 64;

/**
 * The prefix of shard `index` of a deployment whose prefix is `prefix`. Shard 0 is `prefix`; shard
 * i > 0 gets `-i` inside the hash tag (`{censo}` → `{censo-1}`: another slot), or at the end of a
 * prefix without one (a single Redis, where slots do not matter).
 */
export function shardPrefix(prefix: string, index: number): string {
  if (index === 0) return prefix;
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  if (close > open + 1) return `${prefix.slice(0, close)}-${index}${prefix.slice(close)}`;
  return `${prefix}-${index}`;
}

/** The prefixes of a deployment's `count` shards, shard 0 first. */
export function shardPrefixes(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => shardPrefix(prefix, index));
}

/**
 * The shard of a job whose key is `key`, among `count`: FNV-1a over the key's UTF-16 code units.
 * Stable across processes and versions (an API finds the shard of a task another API queued), and
 * even over random ids (UUIDs).
 */
export function shardOf(key: string, count: number): number {
  if (count <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}
