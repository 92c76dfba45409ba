// An idle worker shares the groups others run (task-groups.ts, issue 55): when its tasks' queue
// has nothing for it, it claims a few waiting tasks from the back of the oldest open group and
// runs them, until no open group has any. It looks when BullMQ finds the queue empty (`drained`)
// and when an owner starting a group wakes it (HELP_MESSAGE on its own channel: a look that finds
// nothing puts it among the idle workers, and an owner wakes a few of those); each look is one
// script call, and a busy worker does not look at all.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CLAIM_CHUNK,
  WAITING_ITEM,
  claimMark,
  claimedItem,
  groupKeys,
  groupScripts,
  type QueuedJobData,
  type RedisClient,
} from '@censo/shared';
import type { Logger } from 'pino';
import type { Processor } from './processor.js';

export interface SharerOptions {
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly queue: string;
  /** The tasks' queue's BullMQ worker id: the claims carry it, and its cancellations' channel is its own. */
  readonly worker: string;
  readonly processor: Processor;
  /** Whether a slot of the tasks' queue is free now. */
  readonly idle: () => boolean;
  readonly log: Logger;
  /** How long a claim lasts unless renewed (WORKER_LOCK_DURATION_MS), and how often it is renewed. */
  readonly leaseMs: number;
  readonly renewMs: number;
}

export interface Sharer {
  /** Looks for tasks to claim, now or when the current look ends. */
  wake(): void;
  /** Stops claiming; what was claimed and not started goes back to its group. */
  close(): Promise<void>;
}

/** After a failed look (Redis away), the next one waits this long at least. */
const RETRY_MS = 1_000;

export function createSharer({ redis, prefix, queue, worker, processor, idle, log, leaseMs, renewMs }: SharerOptions): Sharer {
  const scripts = groupScripts(redis);
  const keys = groupKeys(prefix, queue);
  const closing = new AbortController();
  let looking: Promise<void> | null = null;
  let again = false;

  /** The data of the groups claimed from during this look (a group is claimed from several times). */
  const jobs = new Map<string, QueuedJobData>();
  async function jobData(group: string): Promise<QueuedJobData | null> {
    const raw = await redis.hget(`${prefix}:${queue}:${group}`, 'data');
    try {
      const queued = raw === null ? null : (JSON.parse(raw) as QueuedJobData);
      if (queued !== null) jobs.set(group, queued);
      return queued;
    } catch {
      return null;
    }
  }

  async function look(): Promise<void> {
    while (!closing.signal.aborted && idle()) {
      const startedAt = Date.now();
      const claimed = claimedItem(startedAt, worker, startedAt + leaseMs);
      const reply = await scripts.censoClaim(keys.open, keys.waiting, keys.idle, keys.keyPrefix, claimed, CLAIM_CHUNK, worker, startedAt);
      const [group, ...tasks] = reply;
      if (group === undefined || tasks.length === 0) return;
      const queued = jobs.get(group) ?? (await jobData(group));
      if (queued === null) {
        // Its job is gone (removed with its last task) or unreadable: the tasks go back to the group.
        log.warn({ grupo: group, tarefas: tasks }, 'claimed tasks of a group without its job');
        await scripts.censoRenew(keys.group(group), keys.waiting, claimMark(worker), '1', ...tasks.flatMap((id) => [id, WAITING_ITEM]));
        continue;
      }
      log.debug({ grupo: group, tarefas: tasks.length }, 'group tasks claimed');
      await processor.runClaimed({ group, queued, tasks, worker, startedAt, leaseMs, renewMs }, closing.signal);
    }
  }

  function wake(): void {
    if (closing.signal.aborted) return;
    if (looking) {
      again = true;
      return;
    }
    again = false;
    looking = look()
      .finally(() => {
        jobs.clear();
        return processor.tellClaimed();
      })
      .catch(async (err: unknown) => {
        log.warn({ err }, 'could not share a group');
        await sleep(RETRY_MS, undefined, { signal: closing.signal }).catch(() => undefined);
      })
      .finally(() => {
        looking = null;
        if (again) wake();
      });
  }

  return {
    wake,
    async close() {
      closing.abort();
      await looking;
      // No owner wakes a worker that has gone (one that died is popped, finds nobody listening, and
      // the next is woken). Not waited for while Redis is away: it would wait for the reconnection.
      if (redis.status === 'ready') await redis.zrem(keys.idle, worker).catch(() => undefined);
    },
  };
}
