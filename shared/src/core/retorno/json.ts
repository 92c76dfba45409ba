// The JSON return reader (SPEC §1.2). The file is read as a stream of bytes and never held as
// one string: a byte-level state machine validates the document's skeleton with an explicit
// stack (no recursion, so 100k nested brackets are just a deep array) and cuts the rows array
// into element byte ranges, which are skimmed (strings and depth only) and handed to
// JSON.parse in batches, one call per chunk.
//
// Which array holds the rows is only certain once it ends: in a wrapped object, the first
// property whose value is an array of objects only. So a wrapped candidate's rows are kept
// (already reduced to RetornoRow) until its `]`, then released; a bare top-level array streams.
// The values' text is json-values.ts; the byte classes json-bytes.ts.
import { createReadStream } from 'node:fs';
import type { RetornoRow } from '../types.js';
import { badInput } from '../errors.js';
import {
  BUILTIN_COLUMN_NAMES,
  CANDIDATE_TEXTS,
  isBlank,
  ROLES,
  unrecognisedHeader,
  type ColumnNames,
  type HeaderCandidate,
  type Role,
} from './columns.js';
import { toUnreadable } from './failure.js';
import { MAX_CELL_CHARS } from './limits.js';
import { isDigit, isWs } from './json-bytes.js';
import { needsRawNumbers, rawNumberTokens, valueText } from './json-values.js';

export const INVALID_JSON = 'não é um JSON válido.';
export const NO_ROWS_ARRAY = 'o JSON não contém uma lista de linhas.';
export const ROWS_NOT_OBJECTS = 'as linhas do JSON devem ser objetos.';
export const STRING_TOO_LONG = 'tem um texto com mais de 32.767 caracteres.';

const CHUNK_BYTES = 256 * 1024;

export async function* readJsonRetorno(
  path: string,
  signal?: AbortSignal,
  names: ColumnNames = BUILTIN_COLUMN_NAMES,
): AsyncGenerator<RetornoRow, void, undefined> {
  signal?.throwIfAborted();
  const stream = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  const scanner = new JsonRowsScanner(names);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      signal?.throwIfAborted();
      scanner.push(chunk);
      for (const row of scanner.take()) yield row;
    }
    scanner.end();
    for (const row of scanner.take()) yield row;
  } catch (err) {
    throw toUnreadable(err, INVALID_JSON, signal);
  } finally {
    stream.destroy();
  }
}

const enum S {
  Value, // a value is expected
  ValueOrClose, // just after `[`
  KeyOrClose, // just after `{`
  Key, // after `,` in an object
  Colon,
  After, // after a value: `,`, a closing bracket, or the end
  String,
  Number,
  Literal,
  Skim, // inside a row element
  Done,
}

const ARRAY = 0;
const OBJECT = 1;

const enum N {
  Minus, // after `-`
  Zero, // leading `0`
  Int,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpDigits,
}

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

function invalid(): Error {
  return badInput.unreadableRetorno(INVALID_JSON);
}

function tooLong(): Error {
  return badInput.unreadableRetorno(STRING_TOO_LONG);
}

/** Every string (key or value) within SPEC §5's cell limit; an explicit stack, as nesting may be deep. */
function assertCellSized(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.length > MAX_CELL_CHARS) throw tooLong();
    } else if (Array.isArray(item)) {
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, element] of Object.entries(item)) {
        if (key.length > MAX_CELL_CHARS) throw tooLong();
        stack.push(element);
      }
    }
  }
}

/**
 * UTF-16 units a byte of a JSON string adds (escapes aside): none for a UTF-8 continuation byte,
 * two for the lead byte of a 4-byte sequence (a surrogate pair), else one.
 */
function unitsOf(c: number): number {
  return (c & 0xc0) === 0x80 ? 0 : c >= 0xf0 ? 2 : 1;
}

export class JsonRowsScanner {
  private state = S.Value;
  private readonly stack: number[] = [];
  private started = false;

  // String / number / literal sub-state.
  private stringIsKey = false;
  private escape = false;
  private hexLeft = 0;
  private stringUnits = 0;
  private num = N.Int;
  private literal: Buffer = TRUE;
  private literalAt = 0;

  // The candidate rows array (SPEC §1.2) and its elements.
  private candidate = false;
  private rowsDepth = 0;
  private found = false;
  private wrapped = false;
  private elements = 0;
  private usable = false;
  /** The rows array had rows but not the required roles: its first row's keys, for the error. */
  private rolesMissing: HeaderCandidate | null = null;
  private firstKeys: string[] | null = null;
  private pending: RetornoRow[] = [];
  private out: RetornoRow[] = [];

  // Skimming one element.
  private skimDepth = 0;
  private skimString = false;
  private skimEscape = false;
  private skimCarried = 0;
  /** A string of this batch has more bytes than a cell may have characters: count them once parsed. */
  private suspect = false;
  private partial: Buffer[] = []; // an element that began in an earlier chunk
  // Complete elements of the current chunk, parsed together.
  private batchStarts: number[] = [];
  private batchEnds: number[] = [];

  private readonly roles: RoleCache;

  constructor(names: ColumnNames = BUILTIN_COLUMN_NAMES) {
    this.roles = new RoleCache(names);
  }

  take(): RetornoRow[] {
    const rows = this.out;
    this.out = [];
    return rows;
  }

  push(buf: Buffer): void {
    let i = 0;
    const n = buf.length;
    if (!this.started) {
      this.started = true;
      if (n >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) i = 3;
    }
    if (this.state === S.Skim) {
      i = this.skim(buf, i);
      if (this.state === S.Skim) {
        this.partial.push(buf);
        return;
      }
      i++;
    }
    for (; i < n; i++) {
      const c = buf[i]!;
      switch (this.state) {
        case S.Value:
        case S.ValueOrClose: {
          if (isWs(c)) continue;
          if (c === 0x5d) {
            if (this.state !== S.ValueOrClose) throw invalid(); // `[1,]`
            this.close(ARRAY, buf);
            continue;
          }
          if (this.candidate && this.stack.length === this.rowsDepth) {
            if (c === 0x7b) {
              this.elements++;
              const start = i;
              this.state = S.Skim;
              this.skimDepth = 0;
              i = this.skim(buf, i);
              if (this.state === S.Skim) {
                this.partial.push(buf.subarray(start));
                this.flushBatch(buf);
                return;
              }
              this.batchStarts.push(start);
              this.batchEnds.push(i + 1);
              continue;
            }
            this.dropCandidate();
          }
          this.startValue(c);
          continue;
        }
        case S.KeyOrClose:
        case S.Key:
          if (isWs(c)) continue;
          if (c === 0x22) {
            this.state = S.String;
            this.stringIsKey = true;
          } else if (c === 0x7d && this.state === S.KeyOrClose) this.close(OBJECT, buf);
          else throw invalid();
          continue;
        case S.Colon:
          if (isWs(c)) continue;
          if (c !== 0x3a) throw invalid();
          this.state = S.Value;
          continue;
        case S.After:
          if (isWs(c)) continue;
          if (c === 0x2c) {
            this.state = this.stack[this.stack.length - 1] === ARRAY ? S.Value : S.Key;
          } else if (c === 0x5d) this.close(ARRAY, buf);
          else if (c === 0x7d) this.close(OBJECT, buf);
          else throw invalid();
          continue;
        case S.String:
          this.stringByte(c);
          continue;
        case S.Number:
          if (this.numberByte(c)) continue;
          this.state = S.After;
          if (this.stack.length === 0) this.state = S.Done;
          i--; // the delimiter belongs to the container
          continue;
        case S.Literal:
          if (c !== this.literal[this.literalAt]) throw invalid();
          if (++this.literalAt === this.literal.length) this.afterValue();
          continue;
        default: // S.Done
          if (!isWs(c)) throw invalid();
          continue;
      }
    }
    this.flushBatch(buf);
  }

  end(): void {
    if (this.state === S.Number && this.stack.length === 0 && this.numberComplete()) this.state = S.Done;
    if (this.state !== S.Done) throw invalid();
    if (!this.found) throw badInput.unreadableRetorno(NO_ROWS_ARRAY);
    if (this.rolesMissing) throw badInput.unreadableRetorno(unrecognisedHeader('na lista de linhas', this.rolesMissing));
  }

  /** Skims an element from `i`; returns the index of its closing `}` or `buf.length`. */
  private skim(buf: Buffer, i: number): number {
    const n = buf.length;
    let depth = this.skimDepth;
    let inString = this.skimString;
    let escape = this.skimEscape;
    // Where the open string started in this chunk (its bytes from earlier chunks are skimCarried).
    let opened = inString ? i : -1;
    for (; i < n; i++) {
      const c = buf[i]!;
      if (inString) {
        if (escape) escape = false;
        else if (c === 0x5c) escape = true;
        else if (c === 0x22) {
          inString = false;
          // A string of at most 32,767 bytes has at most 32,767 UTF-16 units: only a longer one
          // needs its characters counted, once parsed (the hot loop stays a byte scan).
          if (this.skimCarried + (i - opened) > MAX_CELL_CHARS) this.suspect = true;
          this.skimCarried = 0;
        }
      } else if (c === 0x22) {
        inString = true;
        opened = i;
      } else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (--depth === 0) {
          this.skimDepth = 0;
          this.skimString = false;
          this.skimEscape = false;
          this.state = S.After;
          if (this.partial.length > 0) {
            this.partial.push(buf.subarray(0, i + 1));
            const element = Buffer.concat(this.partial);
            this.partial = [];
            this.addElements(element, [0], [element.length]);
          }
          return i;
        }
      }
    }
    this.skimDepth = depth;
    this.skimString = inString;
    this.skimEscape = escape;
    if (inString) this.skimCarried += n - opened;
    return n;
  }

  private flushBatch(buf: Buffer): void {
    if (this.batchStarts.length === 0) return;
    const starts = this.batchStarts;
    const ends = this.batchEnds;
    this.batchStarts = [];
    this.batchEnds = [];
    this.addElements(buf, starts, ends);
  }

  /** Parses elements that lie in `buf` separated only by commas and white space. */
  private addElements(buf: Buffer, starts: number[], ends: number[]): void {
    const first = starts[0]!;
    const last = ends[ends.length - 1]!;
    const parsed: unknown = JSON.parse(`[${buf.toString('utf8', first, last)}]`);
    if (!Array.isArray(parsed) || parsed.length !== starts.length) throw invalid();
    if (this.suspect) {
      this.suspect = false;
      assertCellSized(parsed);
    }
    for (let k = 0; k < parsed.length; k++) {
      const element = parsed[k] as Record<string, unknown>;
      let raw: Map<string, string> | undefined;
      if (needsRawNumbers(element)) raw = rawNumberTokens(buf.toString('utf8', starts[k]!, ends[k]!));
      this.addRow(element, raw);
    }
  }

  private addRow(element: Record<string, unknown>, raw: Map<string, string> | undefined): void {
    this.firstKeys ??= Object.keys(element)
      .slice(0, CANDIDATE_TEXTS)
      .map((key) => key.slice(0, 200));
    const values: (string | null)[] = [null, null, null, null, null, null];
    for (const key of Object.keys(element)) {
      const slot = this.roles.slotOf(key);
      if (slot === -1 || values[slot] !== null) continue; // the first key of a role wins
      values[slot] = valueText(element[key], raw?.get(key));
    }
    if (!this.usable && values[2] !== null && values[3] !== null && values[4] !== null) {
      this.usable = true;
      if (!this.wrapped && this.pending.length > 0) this.release();
    }
    if (isBlank(values)) return;
    const row: RetornoRow = {
      registro: values[0] ?? null,
      linha: values[1] ?? null,
      codigo: values[2] ?? '',
      campo: values[3] ?? '',
      mensagem: values[4] ?? '',
      conteudo: values[5] ?? '',
    };
    if (this.usable && !this.wrapped) this.out.push(row);
    else this.pending.push(row);
  }

  private release(): void {
    for (const row of this.pending) this.out.push(row);
    this.pending = [];
  }

  private dropCandidate(): void {
    if (!this.wrapped) throw badInput.unreadableRetorno(ROWS_NOT_OBJECTS);
    this.candidate = false;
    this.elements = 0;
    this.usable = false;
    this.pending = [];
    this.batchStarts = [];
    this.batchEnds = [];
  }

  private startValue(c: number): void {
    if (c === 0x7b) {
      this.stack.push(OBJECT);
      this.state = S.KeyOrClose;
    } else if (c === 0x5b) {
      const depth = this.stack.length;
      this.stack.push(ARRAY);
      this.state = S.ValueOrClose;
      if (!this.found && !this.candidate) {
        if (depth === 0) this.beginCandidate(1, false);
        else if (depth === 1 && this.stack[0] === OBJECT) this.beginCandidate(2, true);
      }
    } else if (c === 0x22) {
      this.state = S.String;
      this.stringIsKey = false;
    } else if (c === 0x2d) {
      this.state = S.Number;
      this.num = N.Minus;
    } else if (isDigit(c)) {
      this.state = S.Number;
      this.num = c === 0x30 ? N.Zero : N.Int;
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      this.state = S.Literal;
      this.literal = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
      this.literalAt = 1;
    } else {
      throw invalid();
    }
  }

  private headerCandidate(): HeaderCandidate {
    const texts = this.firstKeys ?? [];
    const roles = new Set<Role>();
    for (const key of texts) {
      const slot = this.roles.slotOf(key);
      if (slot >= 0) roles.add(ROLES[slot]!);
    }
    return { texts, roles };
  }

  private beginCandidate(depth: number, wrapped: boolean): void {
    this.firstKeys = null;
    this.candidate = true;
    this.rowsDepth = depth;
    this.wrapped = wrapped;
    this.elements = 0;
    this.usable = false;
    this.pending = [];
  }

  private close(kind: number, buf: Buffer): void {
    if (this.stack[this.stack.length - 1] !== kind) throw invalid();
    if (kind === ARRAY && this.candidate && this.stack.length === this.rowsDepth) {
      // Rows still waiting in this chunk's batch belong to the array being closed.
      this.flushBatch(buf);
      this.candidate = false;
      this.found = true;
      // Judged in end(), so a syntax error later in the file takes precedence.
      if (this.elements > 0 && !this.usable) this.rolesMissing = this.headerCandidate();
      else this.release();
    }
    this.stack.pop();
    this.afterValue();
  }

  private afterValue(): void {
    this.state = this.stack.length === 0 ? S.Done : S.After;
  }

  private stringByte(c: number): void {
    if (this.hexLeft > 0) {
      const hex = isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
      if (!hex) throw invalid();
      this.hexLeft--;
    } else if (this.escape) {
      this.escape = false;
      if (c === 0x75) this.hexLeft = 4;
      else if (!ESCAPES.has(c)) throw invalid();
      if (++this.stringUnits > MAX_CELL_CHARS) throw tooLong();
    } else if (c === 0x5c) {
      this.escape = true;
    } else if (c === 0x22) {
      this.stringUnits = 0;
      if (this.stringIsKey) this.state = S.Colon;
      else this.afterValue();
    } else if (c < 0x20) {
      throw invalid();
    } else if ((this.stringUnits += unitsOf(c)) > MAX_CELL_CHARS) {
      throw tooLong();
    }
  }

  /** Whether `c` continues the number; a byte that ends it must be a valid delimiter. */
  private numberByte(c: number): boolean {
    const digit = isDigit(c);
    switch (this.num) {
      case N.Minus:
        if (!digit) throw invalid();
        this.num = c === 0x30 ? N.Zero : N.Int;
        return true;
      case N.Zero:
      case N.Int:
        if (digit && this.num === N.Int) return true;
        if (digit) throw invalid();
        if (c === 0x2e) return ((this.num = N.Dot), true);
        if (c === 0x65 || c === 0x45) return ((this.num = N.Exp), true);
        return this.numberEnd(c);
      case N.Dot:
        if (!digit) throw invalid();
        this.num = N.Frac;
        return true;
      case N.Frac:
        if (digit) return true;
        if (c === 0x65 || c === 0x45) return ((this.num = N.Exp), true);
        return this.numberEnd(c);
      case N.Exp:
        if (c === 0x2b || c === 0x2d) return ((this.num = N.ExpSign), true);
        if (!digit) throw invalid();
        this.num = N.ExpDigits;
        return true;
      case N.ExpSign:
        if (!digit) throw invalid();
        this.num = N.ExpDigits;
        return true;
      case N.ExpDigits:
        if (digit) return true;
        return this.numberEnd(c);
    }
  }

  private numberEnd(c: number): boolean {
    if (isWs(c) || c === 0x2c || c === 0x5d || c === 0x7d) return false;
    throw invalid();
  }

  private numberComplete(): boolean {
    return this.num === N.Zero || this.num === N.Int || this.num === N.Frac || this.num === N.ExpDigits;
  }
}

// `"` `\` `/` b f n r t
const ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/** Role slot (ROLES order) of each key seen, so each distinct key is normalised once. */
class RoleCache {
  private readonly cache = new Map<string, number>();

  constructor(private readonly names: ColumnNames) {}

  slotOf(key: string): number {
    let slot = this.cache.get(key);
    if (slot === undefined) {
      const role: Role | undefined = this.names.roleOf(key);
      slot = role === undefined ? -1 : ROLES.indexOf(role);
      // Rows with ever-new keys must not grow the cache without bound.
      if (this.cache.size < 10_000) this.cache.set(key, slot);
    }
    return slot;
  }
}
