// PostgreSQL's failures as the service's errors (SPEC §3.3: 504 on timeout, 503 when the
// database cannot be reached); anything else stays a logged 500.
import { CensoError, DatabaseUnavailableError, QueryTimeoutError } from '@censo/shared';

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovery)
  '53300', // too_many_connections
  '28000',
  '28P01', // authentication failed: the database is unusable with this configuration
  '3D000', // database does not exist
]);

export function isDataException(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}

/** pg's failures as the service's errors; anything else (bad declared SQL) stays a logged 500. */
export function translateError(err: unknown): unknown {
  if (err instanceof CensoError) return err;
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  const message = err instanceof Error ? err.message : '';
  // 57014 is query_canceled: statement_timeout (nothing else here cancels statements).
  if (code === '57014' || message === 'Query read timeout') return new QueryTimeoutError();
  if (
    UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') || // connection_exception class
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message)
  ) {
    return new DatabaseUnavailableError({ cause: err });
  }
  return err;
}
