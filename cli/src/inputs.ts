// The files a command is given, checked as the API checks an upload's fields: the extension
// first (the same messages), then that the file is there. What staff get wrong most is said with
// its fix: a folder where a return goes, Excel's lock file beside an open workbook.
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
  if (path.basename(file).startsWith('~$')) {
    throw new InputError(
      `${quote(file)} é o arquivo que o Excel cria enquanto a planilha está aberta, não um retorno: use a planilha em si (o nome sem "~$").`,
    );
  }
  if ((await stat(file).catch(() => null))?.isDirectory()) {
    throw new InputError(`${quote(file)} é uma pasta, não um arquivo: para os retornos de uma pasta use censo lote ${quote(file)}.`);
  }
  const format = retornoFormat(file);
  if (format === null) throw new InputError(badInput.wrongExtension('retorno').message);
  return { path: await mustBeFile(file), format };
}

export async function txtInput(file: string): Promise<StoredFile> {
  if (path.extname(file).toLowerCase() !== '.txt') throw new InputError(badInput.wrongExtension('txt').message);
  return { path: await mustBeFile(file) };
}
