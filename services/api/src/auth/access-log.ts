// The access log of SPEC §8 (LGPD): one JSON line per /api/* request whose caller was identified
// (uploads, tasks, batches, queries), on a stream of its own (ACCESS_LOG: stdout or a file). Who
// (`sub` and `email` of a person, or `chave`: the index of the key in its setting), from where (`ip`:
// the client's address, X-Forwarded-For's client behind a proxy TRUST_PROXY names, SPEC §9), when,
// the route, the status, the counts, each uploaded file's SHA-256 and size, the query's declared
// name. Only those: never a CPF or a name from a file, file contents, filter values, cookies or tokens.
//
// A file is reopened at its path on SIGHUP (reopenAccessLogs, called by the process's signal
// handling in server.ts), so logrotate can move it and signal (postrotate) instead of copying and
// truncating it, which loses the lines written between the copy and the truncation.
import { closeSync, openSync } from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { pino, type Logger } from 'pino';
import { settlesWithin, traceFields, tracingEnabled } from '@censo/shared';
import type { StaffSession } from './sessions.js';

/** Who a request was let in as (http/auth.ts sets it before the body is read). */
export type Principal =
  | { readonly kind: 'chave'; readonly index: number }
  | { readonly kind: 'pessoa'; readonly sessionId: string; readonly session: StaffSession };

export interface UploadedFile {
  readonly field: string;
  readonly sha256: string;
  readonly bytes: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    uploadedFiles: UploadedFile[] | null;
    /** The request's trace (`trace_id`, `span_id`) when tracing is on, taken while its span is active. */
    traceIds: { trace_id?: string; span_id?: string } | null;
  }
}

/** Called by the upload code for each file stored whole. */
export function noteUploadedFile(request: FastifyRequest, file: UploadedFile): void {
  request.uploadedFiles = [...(request.uploadedFiles ?? []), file];
}

const CLOSE_MS = 2_000;

/** The longest a reopen waits for the new file (a stuck disk must not pile up signal handlers). */
const REOPEN_MS = 2_000;

export interface AccessLog {
  write(line: Record<string, unknown>): void;
  /**
   * A file: opens its path again (a new file there if logrotate moved the old one) and writes
   * on to it; resolves once it is open, or failed (the error goes to `onError`, and the lines
   * keep going to the old file). stdout: nothing to do.
   */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** The access logs open in this process, for the reopen signal (one per app; tests build several). */
const openLogs = new Set<AccessLog>();

/** Reopens every access log file of this process (SIGHUP; docs/operacao.md, "Sinais do operador"). */
export async function reopenAccessLogs(): Promise<void> {
  await Promise.all([...openLogs].map((log) => log.reopen()));
}

/**
 * Opens `target` now, so a path that cannot be written stops the start with its reason. A failed
 * write (disk full) goes to `onError`, never an uncaught exception.
 */
export function openAccessLog(target: string, onError: (err: Error) => void): AccessLog {
  const toFile = target !== 'stdout';
  // By path, not by descriptor: SonicBoom can reopen only a file it knows the path of. The
  // synchronous check first keeps a path that cannot be written a start-up error with its reason.
  if (toFile) checkAccessFile(target);
  const destination = pino.destination(toFile ? { dest: target, sync: false, append: true, mode: 0o640 } : { dest: 1, sync: true });
  destination.on('error', onError);
  const logger: Logger = pino(
    {
      base: null,
      timestamp: pino.stdTimeFunctions.isoTime,
      // A record, not a diagnostic: `"log":"access"` where the level would be, which also tells
      // these lines from the service's own when both go to stdout.
      formatters: { level: () => ({ log: 'access' }) },
    },
    destination,
  );
  let closed = false;
  const log: AccessLog = {
    write: (line) => {
      if (!closed) logger.info(line);
    },
    reopen: async () => {
      if (!toFile || closed) return;
      const opened = new Promise<void>((resolve) => {
        const done = () => {
          destination.off('ready', done);
          destination.off('error', done);
          resolve();
        };
        destination.on('ready', done);
        destination.on('error', done);
      });
      // SonicBoom writes what is pending to the old file first, then switches; lines written
      // meanwhile wait in its buffer and go to the new file.
      destination.reopen();
      await settlesWithin(opened, REOPEN_MS);
    },
    close: async () => {
      openLogs.delete(log);
      // The last requests' lines are written a turn after their responses close (request-log.ts):
      // let them through before the stream ends.
      await new Promise((resolve) => setImmediate(resolve));
      closed = true;
      if (!toFile) return destination.flushSync();
      // Flushes what is pending, then closes the file; a stuck disk does not hold the shutdown.
      const ended = new Promise<void>((resolve) => {
        destination.once('close', resolve);
        destination.end();
      });
      await settlesWithin(ended, CLOSE_MS);
    },
  };
  openLogs.add(log);
  return log;
}

function checkAccessFile(file: string): void {
  try {
    closeSync(openSync(file, 'a', 0o640));
  } catch (err) {
    throw new Error(`ACCESS_LOG cannot be written: ${(err as Error).message}`, { cause: err });
  }
}

/** The line of one request: identity, route, outcome, counts and digests; nothing the caller sent. */
export function accessLine(request: FastifyRequest, status: number): Record<string, unknown> | null {
  // Undefined, not null, on routes of contexts made before this plugin decorated the request
  // (the OpenAPI UI's): those are never identified callers.
  const principal = request.principal as FastifyRequest['principal'] | undefined;
  if (!principal) return null;
  const who = principal.kind === 'chave' ? { chave: principal.index } : { sub: principal.session.sub, email: principal.session.email };
  const fields = request.logFields ?? {};
  return {
    ...who,
    // Fastify's request.ip: the socket's peer, unless that peer is a proxy TRUST_PROXY names.
    ip: request.ip,
    requestId: request.id,
    method: request.method,
    route: request.routeOptions.url ?? null,
    status,
    ...(fields.outcome === undefined ? {} : { outcome: fields.outcome }),
    ...(fields.count === undefined ? {} : { count: fields.count }),
    ...(fields.rows === undefined ? {} : { rows: fields.rows }),
    // A declared query's name (set after the query string was validated), never the raw parameter.
    ...(fields.query === undefined ? {} : { query: fields.query, format: fields.format }),
    // The asynchronous task and batch the request created or read (SPEC §7).
    ...(fields.tarefa === undefined ? {} : { tarefa: fields.tarefa }),
    ...(fields.lote === undefined ? {} : { lote: fields.lote }),
    ...(request.uploadedFiles === null ? {} : { files: request.uploadedFiles }),
    // The request's trace, to go from this line to its spans (SPEC §12); absent when tracing is off.
    ...(request.traceIds as FastifyRequest['traceIds'] | undefined),
  };
}

async function accessLogging(app: FastifyInstance, { log }: { log: AccessLog }): Promise<void> {
  app.decorateRequest('principal', null);
  app.decorateRequest('uploadedFiles', null);
  app.decorateRequest('traceIds', null);
  // Read at the start: the line is written after the response, when the request's span has ended.
  // Fastify's instrumentation opens that span in the first onRequest hook, before this one.
  if (tracingEnabled()) {
    app.addHook('onRequest', async (request) => {
      request.traceIds = traceFields();
    });
  }
  app.onRequestEnd((request, _reply, status) => {
    const line = accessLine(request, status);
    if (line !== null) log.write(line);
  });
  app.addHook('onClose', () => log.close());
}

/** Root-level: every route's requests reach the listener; the API scopes set `principal`. */
export const accessLogPlugin = fp(accessLogging, {
  name: 'censo-access-log',
  fastify: '5.x',
  dependencies: ['censo-request-log'],
});
