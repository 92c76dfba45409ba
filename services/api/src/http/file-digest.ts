// The SHA-256 of an upload, computed as its bytes pass on their way to the storage: no second
// read, no copy kept (the access log of SPEC §8 names each file by its digest, never its content).
import { createHash } from 'node:crypto';
import { Transform, pipeline, type Readable } from 'node:stream';
import { UPLOAD_BUFFER_BYTES } from '@censo/shared';

export interface DigestingStream {
  /** `source`'s bytes, unchanged; its errors are this stream's errors. */
  readonly stream: Readable;
  /** Hex digest of every byte that went through; call once the stream has ended. */
  sha256(): string;
}

export function digesting(source: Readable): DigestingStream {
  const hash = createHash('sha256');
  const stream = new Transform({
    // As much as the storage's own buffer: a small one here would pause the socket at every chunk.
    readableHighWaterMark: UPLOAD_BUFFER_BYTES,
    writableHighWaterMark: UPLOAD_BUFFER_BYTES,
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  // pipeline, not pipe: an error or a destroy on either side reaches the other, so a write that is
  // cut (413, 408) ends the source as it did without the digest in between.
  pipeline(source, stream, () => undefined);
  return { stream, sha256: () => hash.copy().digest('hex') };
}
