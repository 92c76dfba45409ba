// Which shard a new request goes to (QUEUE_SHARDS, sharded.ts). A request is not bound to any
// shard until its ids are drawn, so it need not go where a master is away: a shard that refused
// work (its master killed and its replica not yet promoted, a partition) rests for a few seconds,
// and new requests go to the shards that did not refuse. Jobs already queued stay where they are;
// only the new ones avoid the shard. The rest ends by itself: the shard is tried again by the
// next request drawn to it, and a refusal then starts another rest.
import { randomInt } from 'node:crypto';
import type { Logger } from '@censo/shared';

/**
 * How long a shard that refused rests. A Cluster promotes a dead master's replica within a few
 * seconds (CLUSTER.md, the failover test: 2.9 s), and a shard that rests longer than it is away
 * leaves its share of the requests on the others for nothing.
 */
export const SHARD_REST_MS = 5_000;

export interface ShardChoice {
  /** The shards not resting, in order; all of them when every one rests. */
  open(): readonly number[];
  /** A shard for a new request: at random among the open ones. */
  pick(): number;
  /** The shard refused work (QueueUnavailableError): it rests from now. */
  refused(shard: number): void;
  /** How many rests each shard has started since the process began (a refusal during a rest starts none). */
  rests(): readonly number[];
}

export function shardChoice(count: number, log?: Logger, now: () => number = Date.now): ShardChoice {
  const refusedAt = new Array<number>(count).fill(-Infinity);
  const restsStarted = new Array<number>(count).fill(0);
  const resting = (shard: number, at: number) => at - refusedAt[shard]! < SHARD_REST_MS;
  const all: readonly number[] = Array.from({ length: count }, (_, shard) => shard);
  const open = (): readonly number[] => {
    const at = now();
    const ready = all.filter((shard) => !resting(shard, at));
    return ready.length > 0 ? ready : all;
  };
  return {
    open,
    pick() {
      const from = open();
      return from[randomInt(from.length)]!;
    },
    refused(shard) {
      const at = now();
      // Said and counted once a rest, not once a refused request: a failover refuses many at once.
      if (!resting(shard, at)) {
        restsStarted[shard]!++;
        log?.warn({ shard, restMs: SHARD_REST_MS }, 'shard refused work: new requests go to the other shards meanwhile');
      }
      refusedAt[shard] = at;
    },
    rests: () => restsStarted,
  };
}
