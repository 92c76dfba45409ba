// A strict JSON parser for log lines (SPEC §9: "no key twice in a line"). JSON.parse keeps the
// last of two equal keys without a word, and its reviver only sees the survivor; log pipelines
// such as OpenSearch and Elasticsearch refuse the whole document. So after JSON.parse has checked
// the syntax, one pass over the text compares each object's keys (decoded, so "a" and "\u0061"
// are the same key).

export class DuplicateKeyError extends Error {
  constructor(readonly key: string) {
    super(`duplicate key ${JSON.stringify(key)}`);
    this.name = 'DuplicateKeyError';
  }
}

/** JSON.parse's value; SyntaxError for malformed text, DuplicateKeyError for an object with a key twice. */
export function parseStrictJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  // One frame per open object or array; an object's frame says whether its next string is a key.
  const frames: Array<{ keys: Set<string>; expectKey: boolean } | null> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{') frames.push({ keys: new Set(), expectKey: true });
    else if (c === '[') frames.push(null);
    else if (c === '}' || c === ']') frames.pop();
    else if (c === ',') {
      const top = frames.at(-1);
      if (top) top.expectKey = true;
    } else if (c === '"') {
      const start = i;
      // The syntax is valid, so the string ends at the first quote not escaped by a backslash.
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      const top = frames.at(-1);
      if (top?.expectKey) {
        const key = JSON.parse(text.slice(start, i + 1)) as string;
        if (top.keys.has(key)) throw new DuplicateKeyError(key);
        top.keys.add(key);
        top.expectKey = false;
      }
    }
  }
  return value;
}
