// A batch's combined CSV (SPEC §7.3: `referencia,arquivo,<the divergence's columns>`) rewritten as
// `censo lote`'s own CSV (`arquivo,<the divergence's columns>`), where `lote --servidor` sent each
// file's path as its referencia: every record loses its second field, byte for byte otherwise.
// The service and `censo lote` write CSV with the same writer (csvLine), so a record's first
// field is already `csvField(path)` and its tail is already the local file's bytes.
//
// Records are cut by RFC 4180's rules, not by lines: a quoted field may hold commas, quotes
// (doubled) and line breaks. Bytes, not text: the separators are ASCII, which never occurs inside
// a UTF-8 sequence, so nothing is decoded.

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;

/** Where the field that starts at `start` ends (the index of its separator), or -1 if not in `buf` yet. */
function fieldEnd(buf: Buffer, start: number): number {
  if (buf[start] !== QUOTE) {
    const comma = buf.indexOf(COMMA, start);
    const lf = buf.indexOf(LF, start);
    if (comma === -1) return lf;
    return lf === -1 ? comma : Math.min(comma, lf);
  }
  // Quoted: up to the quote that is not doubled.
  for (let i = buf.indexOf(QUOTE, start + 1); i !== -1; i = buf.indexOf(QUOTE, i + 2)) {
    if (buf[i + 1] === QUOTE) continue;
    return i + 1 < buf.length ? i + 1 : -1;
  }
  return -1;
}

/**
 * The quotes of one buffer, found in order. A record with no quote would otherwise search past its
 * end to the next quote of the buffer, every record again: on a burst's combined CSV (few quotes)
 * that was most of this file's time.
 */
class Quotes {
  /** The first quote at or after the last position asked for (-1: none left; -2: not searched yet). */
  #next = -2;

  constructor(private readonly buf: Buffer) {}

  /** The first quote at or after `from` (positions asked for never go back), or -1. */
  at(from: number): number {
    // Still ahead of `from`, it is still the first one: nothing lies between the two.
    if (this.#next === -2 || (this.#next !== -1 && this.#next < from)) this.#next = this.buf.indexOf(QUOTE, from);
    return this.#next;
  }
}

/** Where the record whose remaining fields start at `start` ends (just past its LF), or -1. */
function recordEnd(buf: Buffer, start: number, quotes: Quotes): number {
  // An LF outside quotes ends it: an even number of quotes since the record's start.
  let inside = false;
  let from = start;
  let quote = quotes.at(start);
  for (;;) {
    const lf = buf.indexOf(LF, from);
    if (lf === -1) return -1;
    while (quote !== -1 && quote < lf) {
      inside = !inside;
      quote = quotes.at(quote + 1);
    }
    if (!inside) return lf + 1;
    from = lf + 1;
  }
}

export interface Rewritten {
  /** Data records seen (the header line not counted). */
  records: number;
}

/**
 * The combined CSV's bytes as `censo lote`'s: `header` instead of the combined header line, then
 * each record without its second field. `counted.records` grows as records go out.
 */
export async function* withoutSecondField(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  header: string,
  counted: Rewritten,
): AsyncGenerator<Buffer> {
  let pending: Buffer = Buffer.alloc(0);
  let headerSkipped = false;
  for await (const chunk of source) {
    const buf = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    const out: Buffer[] = [];
    const quotes = new Quotes(buf);
    let at = 0;
    if (!headerSkipped) {
      const end = recordEnd(buf, 0, quotes);
      if (end === -1) {
        pending = buf;
        continue;
      }
      out.push(Buffer.from(header, 'utf8'));
      headerSkipped = true;
      at = end;
    }
    for (;;) {
      if (at >= buf.length) break;
      const first = fieldEnd(buf, at);
      if (first === -1 || buf[first] !== COMMA) break;
      const second = fieldEnd(buf, first + 1);
      if (second === -1 || buf[second] !== COMMA) break;
      const end = recordEnd(buf, second + 1, quotes);
      if (end === -1) break;
      out.push(buf.subarray(at, first + 1), buf.subarray(second + 1, end));
      counted.records++;
      at = end;
    }
    pending = buf.subarray(at);
    if (out.length > 0) yield Buffer.concat(out);
  }
  if (pending.length > 0) throw new Error('a resposta do servidor terminou no meio de uma linha do CSV');
}
