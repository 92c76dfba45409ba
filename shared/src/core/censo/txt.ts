// Census text file (SPEC §1.1): lines numbered from 1 counting every line, `|`-separated fields,
// record 30 = natural person. The reader hands every line to a visitor and keeps nothing itself:
// the merge (merge.ts) decides what a line is worth keeping, which bounds memory by the return,
// not by the text file.
import { decodeCensoFile, type CensoEncoding, type DecodeOptions } from './decode.js';

/** Fields 1–10 of a record 30; index 0 is field 1 (`30`). */
export type Record30Fields = readonly [string, string, string, string, string, string, string, string, string, string];

/** Field positions (1-based, as in INEP's layout) used by the merge. */
export const CENSO_FIELD = { codigo: 3, inep: 4, cpf: 5, nome: 6, dataNascimento: 7, filiacao: 8, filiacao1: 9, filiacao2: 10 } as const;

export function censoField(fields: Record30Fields, position: number): string {
  return fields[position - 1] ?? '';
}

/**
 * Fields 1–10 of a record-30 line, or `null` when the line is not a usable record 30.
 * Decision: a record 30 with fewer than 10 fields is not usable (every layout year has far more),
 * so a divergence pointing at it means the text file does not match the return (422).
 * The first field must be exactly `30`.
 */
export function parseRecord30(text: string): Record30Fields | null {
  if (!text.startsWith('30|')) return null;
  // A limit of 11 keeps the split cheap on 100-field lines and still tells "at least 10".
  const parts = text.split('|', 11);
  if (parts.length < 10) return null;
  return parts.slice(0, 10) as unknown as Record30Fields;
}

export interface LineVisitor {
  line(linha: number, text: string): void;
  /** Everything visited so far was decoded wrongly; it will be visited again from line 1. */
  restart(): void;
}

export interface LineScan {
  /** Number of lines in the file. */
  readonly lines: number;
  readonly encoding: CensoEncoding;
}

/** How a line ended: the corrected file writes each line back with its own. */
export type LineEnd = '' | '\n' | '\r\n' | '\r';

/**
 * Splits decoded text into lines (LF, CRLF or CR) and reports each line's end. A CR that ends
 * one chunk is held until the next chunk shows whether an LF follows, so CRLF split across two
 * chunks is one line end, not two lines.
 */
export class LineSplitter {
  private pending = '';
  /** A line ended by a CR at the end of the last chunk. */
  private held: string | null = null;
  private count = 0;

  constructor(private readonly onLine: (linha: number, text: string, end: LineEnd) => void) {}

  get lines(): number {
    return this.count;
  }

  push(text: string): void {
    const length = text.length;
    if (length === 0) return;
    let start = 0;
    if (this.held !== null) {
      const crlf = text.charCodeAt(0) === 10;
      this.emit(this.held, crlf ? '\r\n' : '\r');
      this.held = null;
      if (crlf) start = 1;
    }
    for (let i = start; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const piece = text.slice(start, i);
      const line = this.pending ? this.pending + piece : piece;
      this.pending = '';
      if (c === 10) this.emit(line, '\n');
      else if (i + 1 === length) this.held = line;
      else if (text.charCodeAt(i + 1) === 10) {
        this.emit(line, '\r\n');
        i++;
      } else this.emit(line, '\r');
      start = i + 1;
    }
    if (start < length) this.pending += text.slice(start);
  }

  /** The last line may lack its line end. */
  end(): void {
    if (this.held !== null) this.emit(this.held, '\r');
    this.held = null;
    if (this.pending) this.emit(this.pending, '');
    this.pending = '';
  }

  reset(): void {
    this.pending = '';
    this.held = null;
    this.count = 0;
  }

  private emit(text: string, end: LineEnd): void {
    this.count++;
    this.onLine(this.count, text, end);
  }
}

export async function visitCensoLines(path: string, visitor: LineVisitor, options: DecodeOptions = {}): Promise<LineScan> {
  const splitter = new LineSplitter((linha, text) => visitor.line(linha, text));
  let encoding: CensoEncoding = 'utf-8';
  for await (const event of decodeCensoFile(path, options)) {
    if (event.type === 'restart') {
      encoding = event.encoding;
      splitter.reset();
      visitor.restart();
    } else {
      splitter.push(event.text);
    }
  }
  splitter.end();
  return { lines: splitter.lines, encoding };
}
