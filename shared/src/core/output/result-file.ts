// A job's result file written synchronously. A job runs on a job thread (or in the CLI) that has
// nothing else to do while its file is written, and an asynchronous write is a round trip through
// libuv's thread pool, which every thread of the process shares (see ../retorno/xlsx/zip.ts).
import { closeSync, openSync, writeSync } from 'node:fs';

/** Text and bytes are gathered in a buffer of this many bytes between writes. */
const WRITE_BYTES = 256 * 1024;

/**
 * Each piece of text is encoded straight into one reused buffer: gathering a file's text as one
 * string first made V8 flatten a quarter-megabyte string per write, a fresh large-object page each
 * time, and page faults were about a twentieth of a job thread's time.
 */
export class ResultFile {
  private readonly fd: number;
  private readonly buffer = Buffer.allocUnsafe(WRITE_BYTES);
  private used = 0;
  private flushed = 0;

  constructor(path: string) {
    this.fd = openSync(path, 'w', 0o600);
  }

  /** Bytes of text so far: where the next piece starts in the file. */
  position(): number {
    return this.flushed + this.used;
  }

  add(text: string): void {
    // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, 2 units, is 4).
    if (text.length * 3 > WRITE_BYTES - this.used) {
      this.flush();
      if (text.length * 3 > WRITE_BYTES) {
        const bytes = Buffer.from(text);
        this.writeAll(bytes, bytes.length);
        this.flushed += bytes.length;
        return;
      }
    }
    this.used += this.buffer.write(text, this.used);
  }

  addBytes(bytes: Uint8Array): void {
    if (bytes.length > WRITE_BYTES - this.used) {
      this.flush();
      if (bytes.length > WRITE_BYTES) {
        this.writeAll(bytes, bytes.length);
        this.flushed += bytes.length;
        return;
      }
    }
    this.buffer.set(bytes, this.used);
    this.used += bytes.length;
  }

  /** Drops what was added from `position` on, as far as it is still in the buffer. */
  discardFrom(position: number): void {
    if (position >= this.flushed) this.used = Math.min(this.used, position - this.flushed);
  }

  flush(): void {
    this.writeAll(this.buffer, this.used);
    this.flushed += this.used;
    this.used = 0;
  }

  close(): void {
    closeSync(this.fd);
  }

  private writeAll(bytes: Uint8Array, length: number): void {
    for (let at = 0; at < length;) at += writeSync(this.fd, bytes, at, length - at);
  }
}
