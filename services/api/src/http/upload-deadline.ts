// The body deadline of an upload (SPEC §5): the whole body within UPLOAD_TIMEOUT_MS of the
// request's start, and never 30 s without a byte, so a client trickling its body cannot hold an
// upload slot. Progress is read from the socket's byte count rather than from 'data' events:
// listening to the request stream would switch it to flowing mode before the multipart parser
// is attached.
import type { IncomingMessage } from 'node:http';

export interface UploadDeadlineOptions {
  readonly totalMs: number;
  readonly idleMs: number;
}

/** Calls `onExpired` once when the body is late; the returned function stops watching. */
export function watchUploadBody(request: IncomingMessage, { totalMs, idleMs }: UploadDeadlineOptions, onExpired: () => void): () => void {
  const socket = request.socket;
  let lastBytes = socket.bytesRead;
  let lastProgress = Date.now();
  const expire = (): void => {
    stop();
    onExpired();
  };
  const total = setTimeout(expire, totalMs);
  // A quarter of the idle time: a stalled body is cut between 1× and 1.25× idleMs.
  const poll = setInterval(
    () => {
      const bytes = socket.bytesRead;
      if (bytes !== lastBytes) {
        lastBytes = bytes;
        lastProgress = Date.now();
      } else if (Date.now() - lastProgress >= idleMs) {
        expire();
      }
    },
    Math.max(10, Math.floor(idleMs / 4)),
  );
  function stop(): void {
    clearTimeout(total);
    clearInterval(poll);
  }
  return stop;
}
