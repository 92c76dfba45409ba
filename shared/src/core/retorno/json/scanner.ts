// The skeleton of a JSON return (RFC 8259), validated byte by byte with an explicit stack (no
// recursion, so 100k nested brackets are just a deep array). Elements of the candidate rows
// array go to V8's JSON.parse many at a time: a span of whole elements is found by parsing it
// (parsedSpan), and where that is refused they are skimmed (strings and depth) into byte ranges,
// each chunk's complete ones parsed together.
import type { RetornoRow } from '../../types.js';
import { BUILTIN_COLUMN_NAMES, type ColumnNames } from '../columns.js';
import { MAX_CELL_CHARS } from '../limits.js';
import { codigoInepDe, isEscolaKey } from '../escola.js';
import { isDigit, isWs } from './bytes.js';
import { invalid } from './errors.js';
import { RowsCollector } from './rows.js';
import { ScalarToken } from './tokens.js';
import { needsRawNumbers } from './values.js';

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

/** What the scalar being read is, for the school's code (top-level keys and their values only). */
const enum Capture {
  None,
  Key,
  Value,
}

/** Longer keys and values are no school's: a code and a school's name fit well within it. */
const CAPTURE_BYTES = 512;

export class JsonRowsScanner {
  private state = S.Value;
  private readonly stack: number[] = [];
  private started = false;
  private stringIsKey = false;
  private readonly scalar = new ScalarToken();
  private readonly rows: RowsCollector;
  /** Stack depth of the candidate rows array's elements. */
  private rowsDepth = 0;

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
  /** Spans may be tried in this chunk: none refused yet (and the scanner was made with them). */
  private spans = false;

  // The school's INEP code (escola.ts): the top-level object's keys and a school key's value, byte by
  // byte as the scalar is validated, so the code may come before or after the rows array.
  private capture = Capture.None;
  private captured: number[] = [];
  /** The top-level key just read names the school: its value is looked at. */
  private schoolKey = false;
  /** The first school property that holds a code; null when none (yet). */
  escola: string | null = null;

  /** `spans: false` skims every element (the reference the spans are tested against). */
  constructor(
    names: ColumnNames = BUILTIN_COLUMN_NAMES,
    private readonly options: { readonly spans: boolean } = { spans: true },
  ) {
    this.rows = new RowsCollector(names);
  }

  take(): RetornoRow[] {
    return this.rows.take();
  }

  push(buf: Buffer): void {
    let i = 0;
    const n = buf.length;
    this.spans = this.options.spans;
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
          if (this.rows.candidate && this.stack.length === this.rowsDepth) {
            if (c === 0x7b) {
              // Not after an element skimmed in this chunk: the skimmed ones are parsed at the
              // chunk's end (or dropped with their array), and the errors they may raise must come
              // in the same order as when every element is skimmed.
              if (this.spans && this.batchStarts.length === 0) {
                const last = this.parsedSpan(buf, i);
                if (last !== -1) {
                  i = last;
                  this.state = S.After;
                  continue;
                }
              }
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
            this.rows.drop();
            this.batchStarts = [];
            this.batchEnds = [];
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
            this.scalar.beginString();
            if (this.stack.length === 1 && this.escola === null) this.beginCapture(Capture.Key);
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
          if (this.scalar.stringByte(c)) {
            if (this.capture !== Capture.None) this.endCapture('string');
            if (this.stringIsKey) this.state = S.Colon;
            else this.afterValue();
          } else if (this.capture !== Capture.None) this.captureByte(c);
          continue;
        case S.Number:
          if (this.scalar.numberByte(c)) {
            if (this.capture !== Capture.None) this.captureByte(c);
            continue;
          }
          if (this.capture !== Capture.None) this.endCapture('number');
          this.state = S.After;
          if (this.stack.length === 0) this.state = S.Done;
          i--; // the delimiter belongs to the container
          continue;
        case S.Literal:
          if (this.scalar.literalByte(c)) this.afterValue();
          continue;
        default: // S.Done
          if (!isWs(c)) throw invalid();
          continue;
      }
    }
    this.flushBatch(buf);
  }

  end(): void {
    if (this.state === S.Number && this.stack.length === 0 && this.scalar.numberComplete()) this.state = S.Done;
    if (this.state !== S.Done) throw invalid();
    this.rows.end();
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
      let c = buf[i]!;
      if (inString) {
        if (escape) {
          escape = false;
          continue;
        }
        // Most of a row's bytes are string content: run to the next quote or backslash in a loop
        // that tests nothing else.
        while (c !== 0x22 && c !== 0x5c && ++i < n) c = buf[i]!;
        if (i === n) break;
        if (c === 0x5c) escape = true;
        else {
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

  /**
   * Whole elements from `i` (a `{`) parsed in one JSON.parse without skimming them. The text up to
   * the last `}` within MAX_CELL_CHARS bytes parses as a list of objects only when it is whole
   * elements separated by commas and white space: a `}` inside a string leaves that string open,
   * one that closes a nested object leaves its element open, and JSON.parse refuses both. So a
   * success is exactly what skimming would have cut, and the skim cost a third of a j25 job's
   * read. No string of the span can have more characters than a cell (it has fewer bytes), and a
   * span with a number JSON.parse could not keep exactly is left to the skim, which keeps each
   * element's text for it. Returns the index of that `}`, or -1: the skim then goes on element by
   * element, and after a refusal the rest of the chunk does too, so a chunk built to be refused
   * costs one parse more, not one per element.
   */
  private parsedSpan(buf: Buffer, i: number): number {
    const last = buf.lastIndexOf(0x7d, Math.min(buf.length, i + MAX_CELL_CHARS) - 1);
    if (last <= i) return -1;
    let parsed: unknown;
    try {
      parsed = JSON.parse(`[${buf.toString('utf8', i, last + 1)}]`);
    } catch {
      parsed = null;
    }
    if (!Array.isArray(parsed) || !parsed.every(isExactRowObject)) {
      this.spans = false;
      return -1;
    }
    this.rows.addParsed(parsed as Record<string, unknown>[]);
    return last;
  }

  private flushBatch(buf: Buffer): void {
    if (this.batchStarts.length === 0) return;
    const starts = this.batchStarts;
    const ends = this.batchEnds;
    this.batchStarts = [];
    this.batchEnds = [];
    this.addElements(buf, starts, ends);
  }

  private addElements(buf: Buffer, starts: number[], ends: number[]): void {
    const suspect = this.suspect;
    this.suspect = false;
    this.rows.addElements(buf, starts, ends, suspect);
  }

  private startValue(c: number): void {
    if (this.schoolKey) {
      // Only a string or a number can hold a code; any value ends the property.
      this.schoolKey = false;
      if (c === 0x22 || c === 0x2d || isDigit(c)) this.beginCapture(Capture.Value);
      if (c !== 0x22) this.captureByte(c);
    }
    if (c === 0x7b) {
      this.stack.push(OBJECT);
      this.state = S.KeyOrClose;
    } else if (c === 0x5b) {
      const depth = this.stack.length;
      this.stack.push(ARRAY);
      this.state = S.ValueOrClose;
      if (this.rows.open()) {
        if (depth === 0) this.beginCandidate(1, false);
        else if (depth === 1 && this.stack[0] === OBJECT) this.beginCandidate(2, true);
      }
    } else if (c === 0x22) {
      this.state = S.String;
      this.stringIsKey = false;
      this.scalar.beginString();
    } else if (c === 0x2d || isDigit(c)) {
      this.state = S.Number;
      this.scalar.beginNumber(c);
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      this.state = S.Literal;
      this.scalar.beginLiteral(c);
    } else {
      throw invalid();
    }
  }

  private beginCapture(capture: Capture): void {
    this.capture = capture;
    this.captured = [];
  }

  private captureByte(c: number): void {
    if (this.capture === Capture.None) return;
    if (this.captured.length < CAPTURE_BYTES) this.captured.push(c);
    else this.capture = Capture.None; // too long to be a school key or code
  }

  /** A captured key or value ended (the scanner has validated it): is it the school's? */
  private endCapture(kind: 'string' | 'number'): void {
    const capture = this.capture;
    this.capture = Capture.None;
    const raw = Buffer.from(this.captured).toString('utf8');
    this.captured = [];
    if (capture === Capture.Key) {
      this.schoolKey = isEscolaKey(kind === 'string' ? (JSON.parse(`"${raw}"`) as string) : raw);
    } else if (capture === Capture.Value) {
      this.escola = codigoInepDe(kind === 'string' ? (JSON.parse(`"${raw}"`) as string) : raw, kind);
    }
  }

  private beginCandidate(depth: number, wrapped: boolean): void {
    this.rowsDepth = depth;
    this.rows.begin(wrapped);
  }

  private close(kind: number, buf: Buffer): void {
    if (this.stack[this.stack.length - 1] !== kind) throw invalid();
    if (kind === ARRAY && this.rows.candidate && this.stack.length === this.rowsDepth) {
      // Rows still waiting in this chunk's batch belong to the array being closed.
      this.flushBatch(buf);
      this.rows.close();
    }
    this.stack.pop();
    this.afterValue();
  }

  private afterValue(): void {
    this.state = this.stack.length === 0 ? S.Done : S.After;
  }
}

/** An object (a row) whose numbers JSON.parse kept exactly. */
function isExactRowObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !needsRawNumbers(value as Record<string, unknown>);
}
