// Lingering close, as nginx does it (SPEC §5, "every client sees every answer"). When the service
// answers before the request body has arrived (401, 503, 400, 413, 429, 408), it must close the
// connection (the rest of the body cannot stay in front of the next request), but closing a
// socket whose receive buffer still holds unread bytes makes the kernel send a reset, and a
// client that writes its whole body before reading (Node fetch, Python urllib, Java, .NET) then
// sees EPIPE/ECONNRESET instead of the answer. So after the answer the socket is half-closed
// (FIN: the client reads the answer and end of stream) and the rest of the body is read and
// discarded, bounded in bytes and time, before the socket is destroyed.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerLimits {
  /** Bytes of body discarded at most; past this the socket is reset. */
  readonly maxBytes: number;
  /** Total time the socket may linger. */
  readonly maxMs: number;
  /** Time without any byte from the client after which lingering stops. */
  readonly idleMs: number;
}

/** nginx: lingering_time 30 s, lingering_timeout 5 s. The bytes: two 25 MB files and a margin. */
export const DEFAULT_LINGER: LingerLimits = { maxBytes: 51 * 1024 * 1024, maxMs: 30_000, idleMs: 5_000 };

/** The sockets lingering now, so that closing the server does not wait for them. */
export class Lingerer {
  readonly #sockets = new Set<Socket>();
  #closing = false;

  constructor(readonly limits: LingerLimits = DEFAULT_LINGER) {}

  get size(): number {
    return this.#sockets.size;
  }

  /**
   * Makes Node's own close of this connection (after a `Connection: close` response) a lingering
   * one. Node ends such a connection with `socket.destroySoon()` once the response is written; the
   * override keeps its semantics (flush, FIN) and delays only the destroy.
   */
  armResponseClose(request: IncomingMessage): void {
    const socket = request.socket as Socket & { destroySoon?: () => void };
    if (this.#closing || typeof socket.destroySoon !== 'function') return;
    socket.destroySoon = () => this.linger(socket, request);
  }

  /**
   * Half-closes `socket` after what was written to it and discards what the client still sends,
   * until the client ends its side, the body `request` (when there is one) is complete, or a
   * limit is reached; then destroys it.
   */
  linger(socket: Socket, request: IncomingMessage | null): void {
    if (socket.destroyed) return;
    if (this.#closing) {
      socket.destroy();
      return;
    }
    this.#sockets.add(socket);
    let bytes = 0;
    let idle: NodeJS.Timeout | undefined;
    const total = setTimeout(done, this.limits.maxMs);
    const touch = (): void => {
      clearTimeout(idle);
      idle = setTimeout(done, this.limits.idleMs);
    };
    const count = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > this.limits.maxBytes) done();
      else touch();
    };
    const sockets = this.#sockets;
    function done(): void {
      clearTimeout(total);
      clearTimeout(idle);
      sockets.delete(socket);
      request?.off('data', count);
      socket.off('data', count);
      socket.destroy();
    }
    touch();
    socket.once('close', done);
    // The client has sent everything it meant to: nothing unread can arrive any more.
    socket.once('end', done);
    if (request && !request.complete) {
      // Node's HTTP parser may read the socket's handle directly (no 'data' events on the socket),
      // so the body is counted where it surfaces: on the request. Whoever was reading it (the
      // multipart parser of a refused upload) lets go, and the rest flows to nowhere.
      request.unpipe();
      request.on('data', count);
      request.once('end', done);
      request.resume();
    } else {
      // No HTTP request to read through (a framing error): read the socket itself.
      socket.on('data', count);
      socket.resume();
    }
    if (socket.writable) socket.end();
  }

  /** Closing the server: every lingering socket goes now, and no new one lingers. */
  close(): void {
    this.#closing = true;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }
}
