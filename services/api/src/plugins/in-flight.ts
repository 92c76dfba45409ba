// Load shedding for the upload routes: each in-flight upload holds disk space, a job slot and a
// waiting request, so past `max` of them new ones get 503 + Retry-After at once (before the body
// is read) instead of piling up until the disk or the queue gives way.
import type { onRequestHookHandler } from 'fastify';
import { OverloadedError } from '@censo/shared';

export interface InFlightLimiter {
  readonly onRequest: onRequestHookHandler;
  current(): number;
}

export function limitInFlight(max: number): InFlightLimiter {
  let inFlight = 0;
  return {
    async onRequest(_request, reply) {
      if (inFlight >= max) {
        reply.header('retry-after', '5');
        throw new OverloadedError();
      }
      inFlight += 1;
      // 'finish' comes first for a completed response, 'close' alone for an abandoned one; a
      // keep-alive client's next request may arrive between the two, so release on the first.
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        inFlight -= 1;
      };
      reply.raw.once('finish', release);
      reply.raw.once('close', release);
    },
    current: () => inFlight,
  };
}
