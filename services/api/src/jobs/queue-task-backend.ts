// Queue mode's task backend (task-backend.ts): loaded with the BullMQ runner, never in embedded mode.
import type { Config } from '@censo/shared';
import { createRedisStore } from '../tarefas/store-redis.js';
import type { BullmqRunner } from './bullmq.js';
import type { TaskBackend } from './task-backend.js';

/** Queue mode: records in Redis under the queue's prefix, jobs on the tasks' queue of `runner`. */
export function queueTaskBackend(runner: BullmqRunner, config: Pick<Config, 'queuePrefix' | 'redis'>): TaskBackend {
  if (config.redis === null) throw new Error('queue mode needs REDIS_URL');
  return {
    store: createRedisStore(runner.redis, config.queuePrefix),
    execution: runner.tasks,
    shared: { redis: config.redis, prefix: config.queuePrefix },
    close: async () => {},
  };
}
