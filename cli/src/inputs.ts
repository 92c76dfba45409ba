// The files a command is given, checked as the API checks an upload's fields: the extension
// first (the same messages), then that the file is there.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { badInput, type RetornoFormat, type StoredFile, type StoredRetorno } from '@censo/shared';
import { InputError } from './failures.js';

async function mustBeFile(file: string): Promise<string> {
  const resolved = path.resolve(file);
  const info = await stat(resolved).catch(() => null);
  if (!info?.isFile()) throw new InputError(`Arquivo não encontrado: ${file}.`);
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
