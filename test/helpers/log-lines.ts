// A pino destination that keeps each JSON line a process logs, parsed, for a test to read.
import { Writable } from 'node:stream';

export function logLines<T = Record<string, unknown>>(): { readonly lines: T[]; readonly sink: Writable } {
  const lines: T[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as T);
      done();
    },
  });
  return { lines, sink };
}
