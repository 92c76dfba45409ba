// RFC 4180 output of format=csv.
import { describe, expect, it } from 'vitest';
import { csvField, csvLine } from '@censo/shared';

describe('csv', () => {
  it.each([
    ['simples', 'simples'],
    ['', ''],
    ['a,b', '"a,b"'],
    ['diz "oi"', '"diz ""oi"""'],
    ['linha 1\nlinha 2', '"linha 1\nlinha 2"'],
    ['cr\r', '"cr\r"'],
    [' espaços ', ' espaços '],
    ['ação; ok', 'ação; ok'],
  ])('%j → %j', (value, expected) => {
    expect(csvField(value)).toBe(expected);
  });

  it('writes NULL as an empty field and ends lines with CRLF', () => {
    expect(csvLine(['1', null, 'a,b', ''])).toBe('1,,"a,b",\r\n');
  });
});
