// The API's reader of its own ends stream (addressed.ts): the ends of the jobs this process queued,
// told by the workers that ran them, and nothing else. One blocking XREAD on a connection of its
// own, from the stream's start (the stream is this process's, named afresh at each start).
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEnd, throttledErrorLog, type JobEnd, type Logger, type RedisClient } from '@censo/shared';

/** How long one XREAD blocks: an idle API asks once every this long. */
const BLOCK_MS = 10_000;
/** Entries read at most per call. */
const BATCH = 500;
/** The pause after a failed read (Redis away): the client reconnects meanwhile. */
const RETRY_MS = 1_000;

export interface EndsReader {
  /** Stops reading (its connection closes). */
  close(): Promise<void>;
}

/**
 * Reads `stream` on `client` (a connection of its own: XREAD BLOCK holds it), handing each end to
 * `onEnd`. `onReconnect` runs at each (re)connection: an end told while the connection was away is
 * still in the stream, but a job that ended without telling (its worker died) is found by reading states.
 */
export function readEnds(
  client: RedisClient,
  stream: string,
  { onEnd, onReconnect, log }: { onEnd: (end: JobEnd) => void; onReconnect: () => void; log: Logger },
): EndsReader {
  const logError = throttledErrorLog(log);
  let closed = false;
  let after = '0';
  // A read queued while Redis is away is never rejected by disconnect() (ioredis flushes its
  // queue on a close event that a client between two attempts never gets): close() ends the wait.
  let stop!: () => void;
  const stopped = new Promise<null>((resolve) => (stop = () => resolve(null)));
  client.on('error', (err) => logError('ends stream', err));
  client.on('ready', onReconnect);

  const loop = (async () => {
    while (!closed) {
      try {
        const read = client.xread('COUNT', BATCH, 'BLOCK', BLOCK_MS, 'STREAMS', stream, after) as Promise<
          [string, [string, string[]][]][] | null
        >;
        read.catch(() => undefined);
        const reply = await Promise.race([read, stopped]);
        for (const [, entries] of reply ?? []) {
          for (const [id, fields] of entries) {
            after = id;
            const end = parseEnd(fields);
            if (end) onEnd(end);
          }
        }
      } catch (err) {
        if (closed) break;
        logError('ends stream', err);
        await Promise.race([sleep(RETRY_MS), stopped]);
      }
    }
  })();

  return {
    async close() {
      closed = true;
      stop();
      client.off('ready', onReconnect);
      // A blocking read ends only with its connection.
      client.disconnect();
      await loop;
    },
  };
}
