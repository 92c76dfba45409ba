// Bad input must surface as one BadInputError (400), never as whatever a parser, zlib or the
// zip reader happened to throw. Cancellation and the server's own I/O failures are not bad input.
import { BadInputError, badInput } from '../errors.js';

// The upload vanished or the disk failed: a server problem, not a property of the file.
const SYSTEM_ERRORS = new Set(['ENOENT', 'EACCES', 'EPERM', 'EMFILE', 'ENFILE', 'EIO', 'EISDIR', 'ENOMEM']);

export function toUnreadable(err: unknown, why: string, signal?: AbortSignal): unknown {
  if (err instanceof BadInputError) return err;
  if (signal?.aborted) return signal.reason;
  if (err instanceof Error && err.name === 'AbortError') return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && SYSTEM_ERRORS.has(code)) return err;
  return badInput.unreadableRetorno(why);
}
