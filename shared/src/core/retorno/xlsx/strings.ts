// The shared string table, kept compact. A workbook near the upload limit holds hundreds of
// thousands of unique strings (names, CPFs, "sent -- correct" pairs), and as one JS string each
// they cost an object apiece plus, for slices of the inflated text, the 64 KiB chunk strings they
// point into: tens of megabytes that stay live for the whole sheet and set how far V8 lets the
// heap grow before its next full collection. Here items are joined, BLOCK at a time, into flat
// strings, with each item's end offset in an Int32Array; a lookup slices its block. Slicing keeps
// every character as it was decoded (no re-encoding: lone surrogates from `&#xD800;` survive),
// and only the mapped columns' cells are ever looked up.

const BLOCK_BITS = 10;
const BLOCK = 1 << BLOCK_BITS;
const IN_BLOCK = BLOCK - 1;

// Labels and messages repeat over the whole sheet; handing back the same string object keeps
// their hash (and any memo keyed on them) warm instead of slicing a fresh copy per cell.
const CACHE_BITS = 12;
const CACHE_MASK = (1 << CACHE_BITS) - 1;

export class SharedStrings {
  /** Number of items. */
  length = 0;
  private readonly blocks: string[] = [];
  /** End offset of item i in its block (items of block b are b·BLOCK … b·BLOCK + BLOCK − 1). */
  private ends = new Int32Array(BLOCK);
  private pending: string[] = [];
  private pendingChars = 0;
  private readonly cacheKeys = new Int32Array(1 << CACHE_BITS).fill(-1);
  private readonly cacheValues: string[] = new Array<string>(1 << CACHE_BITS).fill('');

  push(text: string): void {
    const i = this.length++;
    if (i >= this.ends.length) {
      const grown = new Int32Array(this.ends.length * 2);
      grown.set(this.ends);
      this.ends = grown;
    }
    // A block's characters are bounded by the 400 MB inflate budget (decoding never lengthens the
    // text), below V8's string limit of 2^29 − 24.
    this.pendingChars += text.length;
    this.ends[i] = this.pendingChars;
    this.pending.push(text);
    if ((i & IN_BLOCK) === IN_BLOCK) this.flush();
  }

  /** Call once after the last push. */
  finish(): void {
    this.flush();
    if (this.ends.length > this.length) this.ends = this.ends.slice(0, Math.max(this.length, 1));
  }

  /** Item `index` (a cell's `<v>` as a number), or `undefined` when there is no such item. */
  get(index: number): string | undefined {
    if (!(index >= 0 && index < this.length) || !Number.isInteger(index)) return undefined;
    const slot = index & CACHE_MASK;
    if (this.cacheKeys[slot] === index) return this.cacheValues[slot];
    const block = this.blocks[index >>> BLOCK_BITS]!;
    const start = (index & IN_BLOCK) === 0 ? 0 : this.ends[index - 1]!;
    const text = block.slice(start, this.ends[index]);
    this.cacheKeys[slot] = index;
    this.cacheValues[slot] = text;
    return text;
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    // join() builds one flat string; the item strings (and the chunks they slice) become garbage.
    this.blocks.push(this.pending.join(''));
    this.pending = [];
    this.pendingChars = 0;
  }
}
