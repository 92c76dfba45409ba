// A minimal, streaming tag scanner for the few SpreadsheetML parts the reader needs. It is not
// a general XML parser: it finds tags with indexOf, hands element local names (prefix dropped,
// so `<x:row>` is `row`) to a subclass, and only gathers text when the subclass asks for it.
// DTDs are refused outright, which is how entity-expansion and external-entity attacks are
// kept out: without a DOCTYPE the only entities are the five predefined ones and numeric
// character references.
import { badInput } from '../../errors.js';
import { MAX_CELL_CHARS } from '../limits.js';

export const INVALID_XML = 'contém XML inválido.';
export const FORBIDDEN_DTD = 'declarações DOCTYPE/ENTITY não são aceitas.';
export const CELL_TOO_LONG = 'tem uma célula com mais de 32.767 caracteres.';

/** A value's text while it accumulates, before `_xHHHH_` escapes (7 characters to 1) are decoded. */
const MAX_CELL_RAW = 7 * MAX_CELL_CHARS;

/** Longest raw XML text (entities not yet decoded) or unfinished tag held between two chunks. */
export const MAX_TEXT = 1 << 20;

const ENTITY = /&(#[xX][0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);/g;
const PREDEFINED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes the predefined entities and numeric references; an unknown `&name;` stays as written. */
export function decodeEntities(text: string): string {
  if (text.indexOf('&') === -1) return text;
  return text.replace(ENTITY, (_, body: string) => {
    if (body.charCodeAt(0) !== 35 /* # */) return PREDEFINED[body] ?? '';
    const hex = body.charCodeAt(1) === 120 || body.charCodeAt(1) === 88;
    const code = hex ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
    if (!(code >= 0 && code <= 0x10ffff)) throw badInput.unreadableRetorno(INVALID_XML);
    return String.fromCodePoint(code);
  });
}

const OOXML_ESCAPE = /_x([0-9a-fA-F]{4})_/g;

/**
 * SpreadsheetML strings escape characters XML cannot carry as `_xHHHH_` (a carriage return is
 * `_x000D_`); Excel writes a literal `_x` as `_x005F_x`, so decoding them all is safe.
 */
export function decodeOoxmlEscapes(text: string): string {
  if (text.indexOf('_x') === -1) return text;
  return text.replace(OOXML_ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Accumulates one value's text, refusing it as soon as it cannot fit in a cell. */
export function appendCapped(current: string, more: string): string {
  if (current.length + more.length > MAX_CELL_RAW) throw badInput.unreadableRetorno(CELL_TOO_LONG);
  return current + more;
}

/** A value's final text: escapes decoded, within Excel's cell limit. */
export function cellString(raw: string): string {
  const text = decodeOoxmlEscapes(raw);
  if (text.length > MAX_CELL_CHARS) throw badInput.unreadableRetorno(CELL_TOO_LONG);
  return text;
}

function isNameEnd(c: number): boolean {
  // space, tab, LF, CR, '/', '>'
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 47 || c === 62;
}

/** What a part reader does with the tags the scanner finds. */
export interface TagHandler {
  open(name: string, selfClosing: boolean, xml: TagScanner): void;
  close(name: string, xml: TagScanner): void;
  /** Text between tags, entities decoded; only called while `xml.collecting` is set. */
  text(text: string, xml: TagScanner): void;
}

/**
 * A handler's shortcut for the tags that make up most of a part (a sheet's cells). Called
 * between tags while no text is being collected, with the position the scanner reached:
 * it handles what it recognises, with exactly the effect the tag-by-tag calls would have had,
 * and returns the position of the first `<` it left to the scanner (or the buffer's length).
 * It must change no state for a tag it leaves, so the scanner can take that tag as usual.
 * `ascii` is the buffer's bytes when the chunk was all ASCII (byte i is character i), or null.
 */
export interface FastPath {
  scan(buf: string, pos: number, ascii: Uint8Array | null): number;
}

// One concrete scanner class driving small handler objects, rather than a base class with
// subclasses: the hot loop then only ever sees one object shape and stays monomorphic.
export class TagScanner {
  /** Set by the handler while it wants the text between tags. */
  collecting = false;
  /** Set by the handler when it has read all it needs; the caller stops feeding. */
  done = false;
  /** Set by the handler on opening a cell (`<c>`): its `<v>` may take the shortcut. */
  valueNext = false;
  /** Set by the handler once it can take the common tags itself. */
  fast: FastPath | null = null;
  private rest = '';
  private pendingText = '';
  // The tag being dispatched, for attr(): the buffer and the tag's bounds in it.
  private buf = '';
  private tagStart = 0;
  private tagEnd = 0;

  // Scratch for attr(): one name, one span.
  private readonly names: string[] = [''];
  private readonly spanStart = new Int32Array(1);
  private readonly spanEnd = new Int32Array(1);

  constructor(private readonly handler: TagHandler) {}

  /** `ascii`: the chunk's bytes when all ASCII (see TextChunk), for the fast path. */
  feed(chunk: string, ascii: Uint8Array | null = null): void {
    // Bytes line up with the buffer only when no unfinished tag is carried in front of them.
    const bytes = this.rest.length > 0 ? null : ascii;
    const buf = this.rest.length > 0 ? this.rest + chunk : chunk;
    this.rest = '';
    this.buf = buf;
    const n = buf.length;
    let pos = 0;
    while (pos < n && !this.done) {
      if (this.fast !== null && !this.collecting) {
        pos = this.fast.scan(buf, pos, bytes);
        if (pos >= n || this.done) break;
      }
      const lt = buf.indexOf('<', pos);
      if (lt === -1) {
        if (this.collecting) {
          if (this.pendingText.length + n - pos > MAX_TEXT) throw badInput.unreadableRetorno(CELL_TOO_LONG);
          this.pendingText += buf.slice(pos);
        }
        pos = n;
        break;
      }
      if (this.collecting && (lt > pos || this.pendingText.length > 0)) {
        const raw = this.pendingText.length > 0 ? this.pendingText + buf.slice(pos, lt) : buf.slice(pos, lt);
        this.pendingText = '';
        this.handler.text(decodeEntities(raw), this);
      }
      if (lt + 1 >= n) {
        pos = lt;
        break;
      }
      const c1 = buf.charCodeAt(lt + 1);
      if (c1 === 47 /* / */) {
        const gt = buf.indexOf('>', lt + 2);
        if (gt === -1) {
          pos = lt;
          break;
        }
        let nameEnd = lt + 2;
        while (nameEnd < gt && !isNameEnd(buf.charCodeAt(nameEnd))) nameEnd++;
        this.handler.close(localName(buf, lt + 2, nameEnd), this);
        pos = gt + 1;
        continue;
      }
      if (c1 === 33 /* ! */ || c1 === 63 /* ? */) {
        const next = this.special(buf, lt, c1);
        if (next === -1) {
          pos = lt;
          break;
        }
        pos = next;
        continue;
      }
      // Open tag: the closing '>' is the first one outside quoted attribute values.
      let gt = -1;
      for (let i = lt + 1; i < n; i++) {
        const c = buf.charCodeAt(i);
        if (c === 62) {
          gt = i;
          break;
        }
        if (c === 34 || c === 39) {
          const q = buf.indexOf(c === 34 ? '"' : "'", i + 1);
          if (q === -1) break;
          i = q;
        }
      }
      if (gt === -1) {
        pos = lt;
        break;
      }
      let nameEnd = lt + 1;
      while (nameEnd < gt && !isNameEnd(buf.charCodeAt(nameEnd))) nameEnd++;
      this.tagStart = nameEnd;
      this.tagEnd = gt;
      this.handler.open(localName(buf, lt + 1, nameEnd), buf.charCodeAt(gt - 1) === 47, this);
      pos = gt + 1;
      if (this.valueNext) {
        this.valueNext = false;
        if (!this.done) pos = this.plainValue(buf, pos);
      }
    }
    if (pos < n && !this.done) {
      this.rest = buf.slice(pos);
      if (this.rest.length > MAX_TEXT) throw badInput.unreadableRetorno(INVALID_XML);
    }
    this.buf = '';
  }

  /**
   * The common `<v>text</v></c>` right after a cell's open tag, dispatched as the same four
   * calls the loop would make, without scanning each tag. Returns where the loop goes on: `pos`
   * itself when the text there is anything else (or cut by the chunk's end).
   */
  private plainValue(buf: string, pos: number): number {
    if (buf.charCodeAt(pos) !== 60 || buf.charCodeAt(pos + 1) !== 118 || buf.charCodeAt(pos + 2) !== 62) return pos;
    const lt = buf.indexOf('<', pos + 3);
    if (lt === -1 || !buf.startsWith('</v></c>', lt)) return pos;
    const handler = this.handler;
    handler.open('v', false, this);
    if (this.done) return pos + 3;
    if (this.collecting && lt > pos + 3) handler.text(decodeEntities(buf.slice(pos + 3, lt)), this);
    handler.close('v', this);
    if (this.done) return lt + 4;
    handler.close('c', this);
    return lt + 8;
  }

  /** Comments, CDATA, processing instructions; anything else starting `<!` is a DTD. */
  private special(buf: string, lt: number, c1: number): number {
    if (c1 === 63) {
      const end = buf.indexOf('?>', lt + 2);
      return end === -1 ? -1 : end + 2;
    }
    if (buf.length - lt < 9) return -1; // not enough to tell a comment from CDATA or DOCTYPE
    if (buf.startsWith('<!--', lt)) {
      const end = buf.indexOf('-->', lt + 4);
      return end === -1 ? -1 : end + 3;
    }
    if (buf.startsWith('<![CDATA[', lt)) {
      const end = buf.indexOf(']]>', lt + 9);
      if (end === -1) return -1;
      if (this.collecting) this.handler.text(buf.slice(lt + 9, end), this);
      return end + 3;
    }
    throw badInput.unreadableRetorno(FORBIDDEN_DTD);
  }

  /** Value of an attribute of the tag being opened, matched by local name; entities decoded. */
  attr(name: string): string | undefined {
    this.names[0] = name;
    this.attrSpans(this.names, this.spanStart, this.spanEnd);
    const start = this.spanStart[0]!;
    if (start < 0) return undefined;
    const raw = this.buf.slice(start, this.spanEnd[0]);
    return raw.indexOf('&') === -1 ? raw : decodeEntities(raw);
  }

  /**
   * Bounds of attribute values of the tag being opened, without building strings:
   * `starts[k]`/`ends[k]` get the bounds of the raw (undecoded) value of `names[k]` (matched by
   * local name) in the tag's buffer (read them with charCodeAt()/raw()), or stay -1. The last
   * occurrence wins.
   */
  attrSpans(names: readonly string[], starts: Int32Array, ends: Int32Array): void {
    const count = names.length;
    for (let k = 0; k < count; k++) starts[k] = ends[k] = -1;
    const buf = this.buf;
    const end = this.tagEnd;
    let i = this.tagStart;
    while (i < end) {
      let c = buf.charCodeAt(i);
      while (i < end && (c === 32 || c === 9 || c === 10 || c === 13 || c === 47)) c = buf.charCodeAt(++i);
      if (i >= end) return;
      const nameStart = i;
      while (i < end && c !== 61 /* = */ && c !== 32 && c !== 9 && c !== 10 && c !== 13) c = buf.charCodeAt(++i);
      const nameEnd = i;
      while (i < end && c !== 34 && c !== 39) c = buf.charCodeAt(++i);
      if (i >= end) return;
      const close = buf.indexOf(c === 34 ? '"' : "'", i + 1);
      if (close === -1 || close > end) return;
      const last = nameEnd > nameStart ? buf.charCodeAt(nameEnd - 1) : -1;
      for (let k = 0; k < count; k++) {
        const name = names[k]!;
        // Cheap rejections first: the last character, then a one-character exact match.
        if (last !== name.charCodeAt(name.length - 1)) continue;
        if (nameEnd - nameStart === name.length && name.length === 1) {
          starts[k] = i + 1;
          ends[k] = close;
          break;
        }
        if (isLocalName(buf, nameStart, nameEnd, name)) {
          starts[k] = i + 1;
          ends[k] = close;
          break;
        }
      }
      i = close + 1;
    }
  }

  /** Char code at a position of the tag being opened (for attrSpans() bounds). */
  charCodeAt(at: number): number {
    return this.buf.charCodeAt(at);
  }

  /** Raw text of the tag being opened between two positions (for attrSpans() bounds). */
  raw(start: number, end: number): string {
    return this.buf.slice(start, end);
  }

  /** Call after the last chunk. A part cut inside a tag is tolerated: zip sizes are checked. */
  end(): void {
    this.rest = '';
    this.pendingText = '';
  }
}

function localName(buf: string, start: number, end: number): string {
  // One-character names (c, v, t, f) are most tags of a sheet; V8 serves these from its
  // single-character string cache instead of allocating. The few longer names the readers
  // look for are matched by char code and returned as (internalised) literals, so the hot tags
  // allocate nothing and the handlers' switches compare by pointer.
  const len = end - start;
  if (len === 1) return buf[start]!;
  const c0 = buf.charCodeAt(start);
  if (len === 3) {
    if (c0 === 114 /* r */) {
      const c1 = buf.charCodeAt(start + 1);
      const c2 = buf.charCodeAt(start + 2);
      if (c1 === 111 /* o */ && c2 === 119 /* w */) return 'row';
      if (c1 === 80 /* P */ && c2 === 104 /* h */) return 'rPh';
    }
  } else if (len === 2) {
    const c1 = buf.charCodeAt(start + 1);
    if (c0 === 115 /* s */ && c1 === 105 /* i */) return 'si';
    if (c0 === 105 /* i */ && c1 === 115 /* s */) return 'is';
  }
  for (let i = end - 1; i >= start; i--) if (buf.charCodeAt(i) === 58 /* : */) return localName(buf, i + 1, end);
  return buf.slice(start, end);
}

/** Whether buf[start, end) after its last ':' (the whole of a one-character name) is `name`. */
function isLocalName(buf: string, start: number, end: number, name: string): boolean {
  let from = start;
  if (end - start !== 1) {
    for (let i = end - 1; i >= start; i--) {
      if (buf.charCodeAt(i) === 58 /* : */) {
        from = i + 1;
        break;
      }
    }
  }
  const len = name.length;
  if (end - from !== len) return false;
  for (let k = 0; k < len; k++) if (buf.charCodeAt(from + k) !== name.charCodeAt(k)) return false;
  return true;
}
