// The files a command is given, checked as the API checks an upload's fields: the extension
// first (the same messages), then that the file is there.
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { badInput, type RetornoFormat, type StoredFile, type StoredRetorno } from '@censo/shared/local';
import { errnoCode, InputError, quote, reasonOf } from './failures.js';

/** The file is there and readable, or one Portuguese line saying which of those it is not. */
async function mustBeFile(file: string): Promise<string> {
  const resolved = path.resolve(file);
  const unreadable = (err: unknown) =>
    new InputError(
      errnoCode(err) === 'ENOENT' ? `Arquivo não encontrado: ${quote(file)}.` : `Não foi possível ler ${quote(file)}: ${reasonOf(err)}.`,
    );
  const info = await stat(resolved).catch((err: unknown) => {
    throw unreadable(err);
  });
  if (info.isDirectory()) throw new InputError(`${quote(file)} é uma pasta, não um arquivo.`);
  if (!info.isFile()) throw new InputError(`${quote(file)} não é um arquivo comum.`);
  await access(resolved, constants.R_OK).catch((err: unknown) => {
    throw unreadable(err);
  });
  return resolved;
}

export function retornoFormat(file: string): RetornoFormat | null {
  const ext = path.extname(file).slice(1).toLowerCase();
  return ext === 'json' || ext === 'xlsx' ? ext : null;
}

export async function retornoInput(file: string): Promise<StoredRetorno> {
  const format = retornoFormat(file);
  if (format === null) throw new InputError(badInput.wrongExtension('retorno').message);
  return { path: await mustBeFile(file), format };
}

export async function txtInput(file: string): Promise<StoredFile> {
  if (path.extname(file).toLowerCase() !== '.txt') throw new InputError(badInput.wrongExtension('txt').message);
  return { path: await mustBeFile(file) };
}
