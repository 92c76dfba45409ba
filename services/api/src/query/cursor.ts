// The `cursor` of GET /api/query: opaque to clients, tamper-evident, and bound to the query and
// its filters (SPEC §3.3: a cursor from another query or filter set → 400). It carries only the
// last key value(s) of the page, as the text PostgreSQL sent, so the next page is a keyset seek
// (`key > last`) whose cost does not grow with depth. `limit` is not bound: a client may change
// the page size between pages.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { BadInputError } from '@censo/shared';

interface CursorPayload {
  /** Format version, so a future change can reject old cursors cleanly. */
  readonly v: 1;
  readonly q: string;
  readonly f: string;
  readonly k: readonly string[];
}

/** Bigger than any honest cursor; checked before decoding so junk costs nothing. */
const MAX_CURSOR_LENGTH = 4096;

/** A short digest of the normalised filters: the cursor is signed, so this needs no secrecy. */
export function filtersDigest(filters: ReadonlyMap<string, string>): string {
  const canonical = JSON.stringify([...filters.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
}

export function encodeCursor(secret: string, query: string, filters: ReadonlyMap<string, string>, key: readonly string[]): string {
  const payload: CursorPayload = { v: 1, q: query, f: filtersDigest(filters), k: key };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${sign(secret, body)}`;
}

/**
 * Returns the key value(s) after which the next page starts. Throws BadInputError for anything
 * not issued by this service for this very query and filter set.
 */
export function invalidCursor(): BadInputError {
  return new BadInputError('Parâmetro cursor inválido.');
}

export function decodeCursor(
  secret: string,
  cursor: string,
  query: string,
  filters: ReadonlyMap<string, string>,
  keyLength: number,
): string[] {
  const invalid = invalidCursor;
  if (cursor.length > MAX_CURSOR_LENGTH) throw invalid();
  const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(cursor);
  if (match === null) throw invalid();
  const [, body, signature] = match as unknown as [string, string, string];
  const expected = Buffer.from(sign(secret, body), 'base64url');
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!isPayload(payload) || payload.k.length !== keyLength) throw invalid();
  if (payload.q !== query || payload.f !== filtersDigest(filters)) {
    throw new BadInputError('Parâmetro cursor não corresponde a esta consulta e filtros.');
  }
  return [...payload.k];
}

function sign(secret: string, body: string): string {
  // The purpose prefix keeps this HMAC from ever matching one made with the same secret elsewhere.
  return createHmac('sha256', secret).update(`censo-query-cursor.${body}`).digest('base64url');
}

function isPayload(value: unknown): value is CursorPayload {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  return (
    p.v === 1 && typeof p.q === 'string' && typeof p.f === 'string' && Array.isArray(p.k) && p.k.every((item) => typeof item === 'string')
  );
}
