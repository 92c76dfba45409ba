// A worker process playing a version (contract handshake tests): the worker of this build, told
// which contract it knows (WORKER_CONTRACT_VERSION), whether it announces it (WORKER_ANNOUNCE=0
// plays a version from before the announcement) and for how long (WORKER_ANNOUNCE_TTL_MS);
// WORKER_ADDRESSED=0 plays one from before addressed messages (issue 55).
import process from 'node:process';
import { createLogger, loadConfig } from '@censo/shared';
import { startWorker } from '@censo/worker';

const config = loadConfig(process.env);
const log = createLogger(config, { role: 'worker' });
const env = process.env;
const worker = await startWorker(config, log, {
  ...(env.WORKER_CONTRACT_VERSION ? { contractVersion: Number(env.WORKER_CONTRACT_VERSION) } : {}),
  announce: env.WORKER_ANNOUNCE !== '0',
  addressed: env.WORKER_ADDRESSED !== '0',
  ...(env.WORKER_ANNOUNCE_TTL_MS ? { announceTtlMs: Number(env.WORKER_ANNOUNCE_TTL_MS) } : {}),
  drainMs: 1_000,
});
await worker.waitUntilReady();
log.info('worker ready');
process.once('SIGTERM', () => {
  void worker.close().then(() => process.exit(0));
});
