// The scalars of the document outside the rows (keys, strings, numbers, literals), validated byte
// by byte as RFC 8259 writes them; strings are held to SPEC §5's cell limit while they are read.
import { MAX_CELL_CHARS } from '../limits.js';
import { isDigit, isWs } from './bytes.js';
import { invalid, tooLong } from './errors.js';

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

// `"` `\` `/` b f n r t
const ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/**
 * UTF-16 units a byte of a JSON string adds (escapes aside): none for a UTF-8 continuation byte,
 * two for the lead byte of a 4-byte sequence (a surrogate pair), else one.
 */
function unitsOf(c: number): number {
  return (c & 0xc0) === 0x80 ? 0 : c >= 0xf0 ? 2 : 1;
}

export class ScalarToken {
  private escape = false;
  private hexLeft = 0;
  private stringUnits = 0;
  private num = N.Int;
  private literal: Buffer = TRUE;
  private literalAt = 0;

  /** After the opening quote. */
  beginString(): void {
    this.escape = false;
    this.hexLeft = 0;
    this.stringUnits = 0;
  }

  /** Whether `c` (after the opening quote) closed the string. */
  stringByte(c: number): boolean {
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
      return true;
    } else if (c < 0x20) {
      throw invalid();
    } else if ((this.stringUnits += unitsOf(c)) > MAX_CELL_CHARS) {
      throw tooLong();
    }
    return false;
  }

  /** `c` is a number's first byte (`-` or a digit). */
  beginNumber(c: number): void {
    this.num = c === 0x2d ? N.Minus : c === 0x30 ? N.Zero : N.Int;
  }

  /** Whether `c` continues the number; a byte that ends it must be a valid delimiter. */
  numberByte(c: number): boolean {
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
        return numberEnd(c);
      case N.Dot:
        if (!digit) throw invalid();
        this.num = N.Frac;
        return true;
      case N.Frac:
        if (digit) return true;
        if (c === 0x65 || c === 0x45) return ((this.num = N.Exp), true);
        return numberEnd(c);
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
        return numberEnd(c);
    }
  }

  /** Whether the number read so far is whole (the document may end on it). */
  numberComplete(): boolean {
    return this.num === N.Zero || this.num === N.Int || this.num === N.Frac || this.num === N.ExpDigits;
  }

  /** `c` is a literal's first byte (`t`, `f` or `n`). */
  beginLiteral(c: number): void {
    this.literal = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
    this.literalAt = 1;
  }

  /** Whether `c` completed the literal. */
  literalByte(c: number): boolean {
    if (c !== this.literal[this.literalAt]) throw invalid();
    return ++this.literalAt === this.literal.length;
  }
}

function numberEnd(c: number): boolean {
  if (isWs(c) || c === 0x2c || c === 0x5d || c === 0x7d) return false;
  throw invalid();
}
