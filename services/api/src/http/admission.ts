// Admission of an upload, decided from its headers before a byte of its body is read: not
// multipart (400), declared larger than any acceptable upload (413), or more uploads in flight
// than the service takes (503 + Retry-After). Each in-flight upload holds disk space, a job slot
// and a waiting request, so past `max` of them new ones are shed at once instead of piling up
// until the disk or the queue gives way. This limit is the real one in both modes: the embedded
// pool's queue is sized from it (server.ts), and the queue mode has no other.
import type { onRequestHookHandler } from 'fastify';
import { FileTooLargeError, OverloadedError, badInput } from '@censo/shared';
import { MAX_FILE_BYTES } from './uploads.js';

/** Two files at the limit plus multipart framing: a larger declared body cannot be accepted. */
export const MAX_BODY_BYTES = 2 * MAX_FILE_BYTES + 1024 * 1024;

/** 400/413 from the headers alone (SPEC §5: "a body that is not multipart is 400 whatever its size"). */
export const checkUploadHeaders: onRequestHookHandler = async (request) => {
  // The multipart parser marks the request only once the body is parsed, so the header is read here.
  const [mediaType = '', ...params] = (request.headers['content-type'] ?? '').split(';');
  if (mediaType.trim().toLowerCase() !== 'multipart/form-data') throw badInput.notMultipart();
  const boundary = params.map((param) => /^\s*boundary\s*=\s*"?([^"]*)"?\s*$/i.exec(param)?.[1]).find((value) => value !== undefined);
  // RFC 2046 §5.1.1: 1 to 70 characters. busboy fails on longer ones with an internal error.
  if (boundary === undefined || boundary.length === 0 || boundary.length > 70) throw badInput.malformedMultipart();
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) throw new FileTooLargeError();
};

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
