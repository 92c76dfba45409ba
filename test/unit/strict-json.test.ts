// The strict parser the log tests use (test/helpers/strict-json.ts): it must refuse every line
// a log pipeline would refuse for a repeated key, and accept every other valid JSON text.
import { describe, expect, it } from 'vitest';
import { DuplicateKeyError, parseStrictJson } from '../helpers/strict-json.js';

describe('parseStrictJson', () => {
  it.each([
    ['{"role":"all","pid":1,"role":"worker"}', 'role'],
    ['{"a":{"b":1,"b":2}}', 'b'],
    ['{"a":[{"x":1},{"y":1,"y":2}]}', 'y'],
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{"s":"\\"role\\":1,","role":1,"s":2}', 's'],
    ['{"a":{},"a":[]}', 'a'],
  ])('refuses %s (key %s twice)', (text, key) => {
    expect(() => parseStrictJson(text)).toThrow(new DuplicateKeyError(key));
  });

  it.each([
    ['{"role":"all","component":"worker","msg":"job done"}'],
    // The same key in sibling or nested objects is fine.
    ['{"a":{"k":1},"b":{"k":1},"k":{"k":{"k":1}}}'],
    ['[{"k":1},{"k":2}]'],
    // Keys' text inside string values does not count.
    ['{"msg":"{\\"a\\":1,\\"a\\":2}","a":"\\\\","b":"a"}'],
    ['{"a":"x","b":["a","a"],"c":"}{,"}'],
    ['"plain"'],
    ['12'],
  ])('accepts %s as JSON.parse does', (text) => {
    expect(parseStrictJson(text)).toEqual(JSON.parse(text));
  });

  it('reports malformed text as JSON.parse does', () => {
    expect(() => parseStrictJson('{"a":1')).toThrow(SyntaxError);
    expect(() => parseStrictJson('')).toThrow(SyntaxError);
  });
});
