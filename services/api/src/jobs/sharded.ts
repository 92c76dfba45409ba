// Queue mode over QUEUE_SHARDS queues (shards.ts): one BullMQ runner per shard, each with its own
// connections, ends stream and handshake under the shard's prefix, and in front of them the one
// runner and the one TaskExecution the rest of the API knows. A task's job goes to the shard of its
// key: its group's id, or its own id for a task queued alone. So any replica finds a task's shard
// from its record, with no lookup and no command of its own.
//
// A request's ids are drawn so that all its jobs share one shard (idSource): its tasks are queued
// all or none by that shard's one call, never a part here and a part there. The shard is drawn per
// request, passing over one that refused work in the last seconds (shard-choice.ts): while a
// shard's master fails over, new requests go to the others. A synchronous request's job is known
// only to the API that waits on it, so it goes to the drawn shard whatever its id.
//
// Changing QUEUE_SHARDS moves the shard of a key. A task queued before the change is looked for
// on its new shard first and then on the others, and the shard where it was found is remembered
// for its end (`strays`): its record still takes its result, and its job and group still go.
import { QueueUnavailableError, shardOf, shardPrefixes, type Config, type JobData, type JobResult, type Logger } from '@censo/shared';
import { freshIds, type JobObservation, type NewIds, type QueuedTask, type TaskExecution, type TaskRef } from '../tarefas/execution.js';
import { createBullmqRunner, type BullmqRunner, type BullmqRunnerOptions } from './bullmq.js';
import type { RunOptions } from './runner.js';
import { shardChoice, type ShardChoice } from './shard-choice.js';

/** Tasks found on a shard other than their key's (queued before QUEUE_SHARDS changed), remembered at most. */
const MAX_STRAYS = 100_000;

/**
 * Draws per id a source may make before it gives up: each draw lands on its shard with chance
 * 1/N, so 64·N draws all miss with chance below e^-64 (never, in practice), and cost microseconds.
 */
const DRAWS_PER_SHARD = 64;

/** The runner of queue mode: one shard's as it always was, or the shards' behind one front. */
export function createQueueRunner(config: Config, log: Logger, options: BullmqRunnerOptions = {}): BullmqRunner {
  if (config.queueShards <= 1) return createBullmqRunner(config, log, options);
  const shards = shardPrefixes(config.queuePrefix, config.queueShards).map((queuePrefix, shard) =>
    createBullmqRunner({ ...config, queuePrefix }, log.child({ shard }), { ...options, shard }),
  );
  return shardedRunner(shards, shardChoice(shards.length, log));
}

/** Adds up the shards' answers of one kind. */
function sum(all: readonly Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const one of all) for (const [key, value] of Object.entries(one)) out[key] = (out[key] ?? 0) + value;
  return out;
}

/** The one runner over the shards: a synchronous request goes to the shard drawn for it. */
export function shardedRunner(shards: readonly BullmqRunner[], choice: ShardChoice): BullmqRunner {
  return {
    mode: 'bullmq',
    pendingCount: () => shards.reduce((total, shard) => total + shard.pendingCount(), 0),
    // Shard 0's prefix is QUEUE_PREFIX: the records and whatever else is not a job's live there.
    redis: shards[0]!.redis,
    tasks: shardedTasks(
      shards.map((shard) => shard.tasks),
      choice,
    ),
    async run(data: JobData, options: RunOptions): Promise<JobResult> {
      const shard = choice.pick();
      try {
        return await shards[shard]!.run(data, options);
      } catch (err) {
        if (err instanceof QueueUnavailableError) choice.refused(shard);
        throw err;
      }
    },
    shardRests: () => choice.rests(),
    async counts() {
      return sum(await Promise.all(shards.map(async (shard) => (await shard.counts?.()) ?? {})));
    },
    async isReady() {
      return (await Promise.all(shards.map((shard) => shard.isReady()))).every(Boolean);
    },
    async close() {
      await Promise.all(shards.map((shard) => shard.close()));
    },
  };
}

/** The key a task's job is routed by: its group's id, or its own when it is a job of its own. */
const keyOf = (task: TaskRef) => task.grupo || task.id;

/** The TaskExecution over the shards' own: each call goes to the shard of each task's key. */
export function shardedTasks(shards: readonly TaskExecution[], choice: ShardChoice = shardChoice(shards.length)): TaskExecution {
  const strays = new Map<string, number>();
  const at = (task: TaskRef): number => strays.get(keyOf(task)) ?? shardOf(keyOf(task), shards.length);
  /** Tasks by shard, each with its place in `tasks`. */
  const split = <T extends TaskRef>(tasks: readonly T[]) => {
    const parts = new Map<number, { tasks: T[]; places: number[] }>();
    tasks.forEach((task, place) => {
      const shard = at(task);
      const part = parts.get(shard) ?? { tasks: [], places: [] };
      part.tasks.push(task);
      part.places.push(place);
      parts.set(shard, part);
    });
    return parts;
  };
  /** A task missing on its shard: on another, if QUEUE_SHARDS changed while it was queued. */
  async function elsewhere(task: TaskRef, checked: number): Promise<JobObservation> {
    for (let shard = 0; shard < shards.length; shard++) {
      if (shard === checked) continue;
      const seen = await shards[shard]!.inspect(task);
      if (seen.state === 'missing') continue;
      if (strays.size >= MAX_STRAYS) strays.delete(strays.keys().next().value!);
      strays.set(keyOf(task), shard);
      return seen;
    }
    return { state: 'missing' };
  }

  return {
    mode: 'bullmq',
    idSource(): NewIds {
      // A shard for the request, at random among those not resting (requests spread as their keys
      // would), then ids drawn until one routes there: ids stay the random UUIDs every process
      // routes by, less log2(N) bits.
      const shard = choice.pick();
      return (prefix = '') => {
        for (let draw = 0; draw < DRAWS_PER_SHARD * shards.length; draw++) {
          const id = freshIds(prefix);
          if (shardOf(id, shards.length) === shard) return id;
        }
        throw new Error(`no id drawn for shard ${shard} of ${shards.length}`);
      };
    },
    async groupSize() {
      // Every worker reads every shard, so the open shards' workers are all of them: a resting
      // shard's look at its workers would only wait on its master.
      return Math.min(...(await Promise.all(choice.open().map((shard) => shards[shard]!.groupSize()))));
    },
    async rescue() {
      await Promise.all(shards.map((shard) => shard.rescue?.()));
    },
    async submit(jobs: readonly QueuedTask[]) {
      // All or none, as one shard's submit is. A request's ids share a shard (idSource), so this is
      // one part; tasks from elsewhere that span shards are undone by cancelling the parts queued
      // when another shard refused its own (a worker may have run some meanwhile).
      const parts = [...split(jobs)];
      const results = await Promise.allSettled(parts.map(([shard, part]) => shards[shard]!.submit(part.tasks)));
      const refused = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (!refused) return;
      parts.forEach(([shard], i) => {
        if (results[i]!.status === 'rejected') choice.refused(shard);
      });
      await Promise.allSettled(
        parts.flatMap(([shard, part], i) =>
          results[i]!.status === 'fulfilled' ? part.tasks.map((task) => shards[shard]!.cancel(task)) : [],
        ),
      );
      throw refused.reason instanceof QueueUnavailableError ? refused.reason : new QueueUnavailableError({ cause: refused.reason });
    },
    async inspect(task) {
      const shard = at(task);
      const seen = await shards[shard]!.inspect(task);
      return seen.state === 'missing' ? elsewhere(task, shard) : seen;
    },
    async inspectAll(tasks) {
      const out: JobObservation[] = new Array<JobObservation>(tasks.length);
      await Promise.all(
        [...split(tasks)].map(async ([shard, part]) => {
          const seen = await shards[shard]!.inspectAll(part.tasks);
          for (let i = 0; i < seen.length; i++) {
            const task = part.tasks[i]!;
            out[part.places[i]!] = seen[i]!.state === 'missing' ? await elsewhere(task, shard) : seen[i]!;
          }
        }),
      );
      return out;
    },
    async cancel(task) {
      await shards[at(task)]!.cancel(task);
    },
    async forget(tasks) {
      await Promise.all([...split(tasks)].map(([shard, part]) => shards[shard]!.forget(part.tasks)));
      for (const task of tasks) strays.delete(keyOf(task));
    },
    async waiting() {
      return (await Promise.all(shards.map((shard) => shard.waiting()))).reduce((total, count) => total + count, 0);
    },
    async running() {
      const all = new Map<string, number>();
      for (const one of await Promise.all(shards.map((shard) => shard.running()))) for (const [id, since] of one) all.set(id, since);
      return all;
    },
    onSettled(listener) {
      for (const shard of shards) shard.onSettled(listener);
    },
    async close() {
      // Each shard's runner closes its own.
    },
  };
}
