// Where a command's data goes (-o or stdout) and in which format. A file-system refusal on -o is
// one Portuguese line (exit 1), never a stream's unhandled 'error' event.
import { existsSync, unlinkSync } from 'node:fs';
import { unlink, open } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BadUsage, errnoCode, InputError, quote, reasonOf } from './failures.js';
import { interruptNote, onInterrupt } from './interrupt.js';

/** The formats a list can be written in, by the extension that names each. */
const LIST_EXTENSIONS = ['json', 'csv', 'xlsx'];

/** -o as given: `-` is standard output (undefined), as in most tools. */
export function outputPath(output: string | undefined): string | undefined {
  return output === '-' ? undefined : output;
}

/**
 * The format of a list (divergences, persons, a batch) and where it goes. The name never
 * contradicts the format: `-o x.xls` (Excel 97-2003, which this does not write), `-o x.txt` and
 * `--format csv -o x.xlsx` are refused (exit 2) with what to write instead. Without --format,
 * -o's extension decides; with neither, JSON. A workbook never goes to a terminal.
 */
export function listOutput<F extends string>(
  given: F | undefined,
  output: string | undefined,
  allowed: readonly F[],
): { readonly format: F | 'json'; readonly output: string | undefined } {
  const file = outputPath(output);
  const extension = file === undefined ? '' : path.extname(file).slice(1).toLowerCase();
  const named = (allowed as readonly string[]).includes(extension) ? (extension as F) : null;
  if (file !== undefined && extension !== '' && named === null) {
    const instead = file.slice(0, file.length - extension.length) + (extension === 'xls' ? 'xlsx' : (given ?? 'json'));
    if (extension === 'xls') {
      throw new BadUsage(`-o ${quote(file)}: o censo não grava .xls (Excel 97-2003); use -o ${quote(instead)}, que o Excel abre.`);
    }
    throw new BadUsage(
      `-o ${quote(file)}: .${extension} não é um formato desta saída; use ${LIST_EXTENSIONS.map((e) => `.${e}`).join(', ')} (por exemplo -o ${quote(instead)}).`,
    );
  }
  if (given !== undefined && named !== null && named !== given) {
    const instead = file!.slice(0, file!.length - extension.length) + given;
    throw new BadUsage(`--format ${given} e -o ${quote(file!)} não combinam: use -o ${quote(instead)} ou --format ${named}.`);
  }
  const format = given ?? named ?? 'json';
  if (format === 'xlsx' && file === undefined && process.stdout.isTTY) {
    throw new BadUsage('uma planilha .xlsx não se mostra no terminal: grave-a com -o arquivo.xlsx (ou redirecione: > arquivo.xlsx).');
  }
  expectOutput(file);
  return { format, output: file };
}

/** corrigir's -o: the census file is text (`.txt`, or no extension); `-` is standard output. */
export function textOutput(output: string): string | undefined {
  const file = outputPath(output);
  const extension = file === undefined ? '' : path.extname(file).slice(1).toLowerCase();
  if (extension !== '' && extension !== 'txt') {
    const instead = file!.slice(0, file!.length - extension.length) + 'txt';
    throw new BadUsage(`-o ${quote(file!)}: o arquivo corrigido é o txt do Censo; use -o ${quote(instead)}.`);
  }
  expectOutput(file);
  return file;
}

/** From the command's start until -o is written whole, an interruption says it was not written. */
const unwritten = new Map<string, () => void>();

function expectOutput(output: string | undefined): void {
  if (output !== undefined && !unwritten.has(output)) unwritten.set(output, interruptNote(`${quote(output)} não foi gravado`));
}

function written(output: string): void {
  unwritten.get(output)?.();
  unwritten.delete(output);
}

/**
 * `Não foi possível gravar em "x": disco cheio.` (`output` undefined: stdout). A missing folder and
 * a refused permission name the folder, so the message says where the fix goes.
 */
function writeFailure(output: string | undefined, err: unknown): InputError {
  let reason = reasonOf(err);
  if (output !== undefined) {
    const folder = path.dirname(output);
    const code = errnoCode(err);
    // The file is missing by definition when -o is new: what is missing is its folder (or a link's target).
    if (code === 'ENOENT') reason = existsSync(folder) ? 'caminho não encontrado' : `a pasta ${quote(folder)} não existe`;
    else if (code === 'EACCES' || code === 'EPERM') {
      reason = existsSync(output) ? 'sem permissão para alterar este arquivo' : `sem permissão para gravar na pasta ${quote(folder)}`;
    }
  }
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
  const removal = regular ? onInterrupt(() => unlinkSync(output)) : () => {};
  expectOutput(output);
  const complete = () => {
    removal();
    written(output);
  };
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
