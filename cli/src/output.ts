// Where a command's data goes (-o or stdout) and in which format. A file-system refusal on -o is
// one Portuguese line (exit 1), never a stream's unhandled 'error' event.
import { unlinkSync } from 'node:fs';
import { unlink, open } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { errnoCode, InputError, quote, reasonOf } from './failures.js';
import { onInterrupt } from './interrupt.js';

/** `--format` when given; else -o's extension when it is one of `allowed` (`-o divergencias.csv`); else JSON. */
export function formatFor<F extends string>(given: F | undefined, output: string | undefined, allowed: readonly F[]): F | 'json' {
  if (given !== undefined) return given;
  const extension = output === undefined ? '' : path.extname(output).slice(1).toLowerCase();
  return (allowed as readonly string[]).includes(extension) ? (extension as F) : 'json';
}

/** `Não foi possível gravar em "x": disco cheio.` (`output` undefined: stdout). */
function writeFailure(output: string | undefined, err: unknown): InputError {
  // -o in a folder that does not exist: the file is missing by definition, its folder is what is.
  const reason = errnoCode(err) === 'ENOENT' ? 'a pasta não existe' : reasonOf(err);
  return new InputError(`Não foi possível gravar ${output === undefined ? 'na saída padrão' : `em ${quote(output)}`}: ${reason}.`);
}

export interface Output {
  /** Copies `source` to -o (ending it) or to stdout (left open); from then on a signal leaves -o as it is. */
  write(source: Readable): Promise<void>;
  /**
   * After a failure (of the write, or of whatever the command did meanwhile): closes -o and
   * removes it when it is a regular file, so no partial result stays. The error to throw: the
   * write's own failure as one Portuguese line, else `err`.
   */
  abandon(err: unknown): Promise<unknown>;
}

/**
 * -o opened (created or truncated) at once, so a folder, a missing folder or a file without
 * permission fails before any work is done; stdout without -o. Until `write()` has copied the
 * whole result, a signal that ends the command removes a regular -o, as a failure does
 * (interrupt.ts).
 */
export async function openOutput(output: string | undefined): Promise<Output> {
  if (output === undefined) {
    let error: unknown;
    process.stdout.on('error', (err) => (error ??= err));
    return {
      write: (source) => pipeline(source, process.stdout, { end: false }),
      abandon: async (err) => (error === undefined ? err : writeFailure(output, error)),
    };
  }
  const handle = await open(output, 'w').catch((err: unknown) => {
    throw writeFailure(output, err);
  });
  const regular = (await handle.stat()).isFile();
  const complete = regular ? onInterrupt(() => unlinkSync(output)) : () => {};
  const stream = handle.createWriteStream();
  let error: unknown;
  stream.on('error', (err) => (error ??= err));
  return {
    async write(source) {
      await pipeline(source, stream);
      complete();
    },
    async abandon(err) {
      complete();
      stream.destroy();
      await handle.close().catch(() => {});
      if (regular) await unlink(output).catch(() => {});
      return error === undefined ? err : writeFailure(output, error);
    },
  };
}
