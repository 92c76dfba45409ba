// The query cursor: opaque, tamper-evident, bound to the query and its filters (SPEC §3.3).
import { describe, expect, it } from 'vitest';
import { BadInputError } from '@censo/shared';
import { decodeCursor, encodeCursor, filtersDigest } from '../../services/api/dist/query/cursor.js';

const SECRET = 'segredo';
const filters = new Map([
  ['user_id', '3'],
  ['inicio', '2024-01-01'],
]);

function rejects(fn: () => unknown, message: string): void {
  expect(fn).toThrow(BadInputError);
  expect(fn).toThrow(message);
}

describe('query cursor', () => {
  it('round-trips the last key values as text', () => {
    const cursor = encodeCursor(SECRET, 'audits', filters, ['9007199254740993']);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(decodeCursor(SECRET, cursor, 'audits', filters, 1)).toEqual(['9007199254740993']);
    const composite = encodeCursor(SECRET, 'q', new Map(), ['2024-01-01 10:00:00.123456', '7']);
    expect(decodeCursor(SECRET, composite, 'q', new Map(), 2)).toEqual(['2024-01-01 10:00:00.123456', '7']);
  });

  it('does not depend on the order the filters were given in', () => {
    const reordered = new Map([
      ['inicio', '2024-01-01'],
      ['user_id', '3'],
    ]);
    expect(filtersDigest(reordered)).toBe(filtersDigest(filters));
    const cursor = encodeCursor(SECRET, 'audits', filters, ['1']);
    expect(decodeCursor(SECRET, cursor, 'audits', reordered, 1)).toEqual(['1']);
  });

  it('rejects a cursor for another query or filter set', () => {
    const cursor = encodeCursor(SECRET, 'audits', filters, ['1']);
    const other = 'Parâmetro cursor não corresponde a esta consulta e filtros.';
    rejects(() => decodeCursor(SECRET, cursor, 'outra', filters, 1), other);
    rejects(() => decodeCursor(SECRET, cursor, 'audits', new Map([['user_id', '3']]), 1), other);
    rejects(() => decodeCursor(SECRET, cursor, 'audits', new Map([...filters, ['action', 'x']]), 1), other);
    rejects(
      () =>
        decodeCursor(
          SECRET,
          cursor,
          'audits',
          new Map([
            ['user_id', '4'],
            ['inicio', '2024-01-01'],
          ]),
          1,
        ),
      other,
    );
  });

  it('rejects anything it did not sign', () => {
    const cursor = encodeCursor(SECRET, 'audits', filters, ['1']);
    const [body, signature] = cursor.split('.') as [string, string];
    const forgedBody = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), k: ['1000'] })).toString(
      'base64url',
    );
    const invalid = 'Parâmetro cursor inválido.';
    for (const bad of [
      '',
      'abc',
      `${body}.`,
      `.${signature}`,
      `${forgedBody}.${signature}`,
      `${body}.${signature.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`,
      `${body}.${signature}x`,
      `${body}==.${signature}`,
      'x'.repeat(5000),
    ]) {
      rejects(() => decodeCursor(SECRET, bad, 'audits', filters, 1), invalid);
    }
    rejects(() => decodeCursor('outro segredo', cursor, 'audits', filters, 1), invalid);
    // A signed cursor with the wrong number of key values (a declaration changed its key).
    rejects(() => decodeCursor(SECRET, cursor, 'audits', filters, 2), invalid);
  });
});
