// A cancellation addressed to the worker holding the job (addressed.ts): its id is in the job's
// lock, and it hears on a channel of its own. A worker from before ADDRESSED_CONTRACT_VERSION
// subscribes to no such channel, so a cancellation nobody took goes on the queue's events stream
// too, where that worker reads it (a rolling upgrade). On a Redis Cluster PUBLISH counts only the
// subscribers of the node it reached; a count of 0 there only costs that one event more.
import type { QueueEventsProducer } from 'bullmq';
import { CANCEL_EVENT, EVENTS_MAX_LEN, cancelChannel, lockKey, workerOfToken, type RedisClient } from '@censo/shared';

export interface CancelRoute {
  readonly client: RedisClient;
  readonly prefix: string;
  /** The queue's name and the producer of its events (the older workers' path). */
  readonly queue: string;
  readonly events: QueueEventsProducer;
}

/**
 * Asks the worker that holds job `holder` to stop `id` (the job itself, or one task of a group job
 * `holder`). A job no worker holds has nobody to stop: nothing is sent.
 */
export async function sendCancel({ client, prefix, queue, events }: CancelRoute, holder: string, id: string): Promise<void> {
  const token = await client.get(lockKey(prefix, queue, holder));
  if (token === null) return;
  const worker = workerOfToken(token);
  if (worker !== null && (await client.publish(cancelChannel(prefix, queue, worker), id)) > 0) return;
  await events.publishEvent({ eventName: CANCEL_EVENT, jobId: id }, EVENTS_MAX_LEN);
}

/**
 * Asks worker `worker` (its BullMQ id) to stop task `id`, which it claimed from a group it shares
 * (task-groups.ts). Only workers that share groups claim, and they all hear on their own channel;
 * one that missed it finds its claim gone at its next renewal and stops then.
 */
export async function sendCancelTo({ client, prefix, queue }: CancelRoute, worker: string, id: string): Promise<void> {
  if (workerOfToken(`${worker}:0`) !== worker) return; // the field comes from Redis: only a worker id of ours names a channel
  await client.publish(cancelChannel(prefix, queue, worker), id);
}
