// The returns under a folder for `censo lote`. The walk never stops at one bad entry: an
// unreadable subfolder or a link to nothing becomes one problem of the batch (reported, exit 1)
// and the rest is still read. Symbolic links are followed (a school's folder linked from a
// shared drive is read like any other); a folder reached twice through links is read once.
// Hidden entries (`.…`) and Office's lock files (`~$retorno.xlsx`, present while the workbook
// is open) are not returns and are passed over in silence; every other file that is not a return
// (an old `.xls`, a `.zip`, a PDF, an earlier CSV output) is listed as ignored, so the summary
// can name what was not read.
import { readdir, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { RetornoFormat } from '@censo/shared/local';
import { errnoCode, InputError, quote, reasonOf } from './failures.js';
import { retornoFormat } from './inputs.js';
import { LOTE_OUTPUT_NOTE, projectOutputNote } from './own-output.js';

export interface ReturnFile {
  /** Its path below the folder, with `/`: the `arquivo` column. */
  readonly name: string;
  readonly path: string;
  readonly format: RetornoFormat;
  /** Device and inode: the same file under another name (a link) is still this file. */
  readonly identity: string;
  /** Bytes, when listed: how `lote` sizes its batches. */
  readonly size: number;
}

export interface Problem {
  readonly name: string;
  readonly erro: string;
  /** A return that could not be read, or a subfolder (which is not a return: counted apart). */
  readonly kind: 'arquivo' | 'pasta';
}

/** A file the batch did not read, with what to do about it when there is something to do. */
export interface Ignored {
  readonly name: string;
  readonly note: string | null;
}

/** Said of an earlier `censo lote` result found among the returns. */
export const OWN_OUTPUT_NOTE = LOTE_OUTPUT_NOTE;

/** What to do with a file that is almost a return. */
const NOTES: Readonly<Record<string, string>> = {
  xls: 'Excel 97-2003: abra no Excel e salve como .xlsx',
  xlsm: 'salve como .xlsx',
  xlsb: 'salve como .xlsx',
  ods: 'salve como .xlsx',
  zip: 'compactado: extraia os retornos na pasta',
  rar: 'compactado: extraia os retornos na pasta',
  '7z': 'compactado: extraia os retornos na pasta',
};

export interface FolderListing {
  /** Sorted by name (UTF-16 code units), so a batch's output has a stable order. */
  readonly files: readonly ReturnFile[];
  /** Entries that could not be read, in the order they were met. */
  readonly problems: readonly Problem[];
  /** Files that are not returns, in the order they were met. */
  readonly ignored: readonly Ignored[];
}

export const identityOf = (info: Stats): string => `${info.dev}:${info.ino}`;

function skipped(name: string): boolean {
  return name.startsWith('.') || name.startsWith('~$');
}

async function ignoredFile(name: string, file: string): Promise<Ignored> {
  const extension = path.extname(name).slice(1).toLowerCase();
  // A CSV may be this command's own earlier output; a quick look at its header says.
  if (extension === 'csv') {
    const note = await projectOutputNote(file);
    if (note !== null) return { name, note };
  }
  return { name, note: NOTES[extension] ?? null };
}

export async function listReturns(folder: string): Promise<FolderListing> {
  const root = await stat(folder).catch((err: unknown) => {
    throw new InputError(
      errnoCode(err) === 'ENOENT'
        ? `Pasta não encontrada: ${quote(folder)}.`
        : `Não foi possível ler a pasta ${quote(folder)}: ${reasonOf(err)}.`,
    );
  });
  if (!root.isDirectory()) {
    throw new InputError(`${quote(folder)} é um arquivo, não uma pasta: lote lê uma pasta; para um só retorno use censo divergencias.`);
  }
  const files: ReturnFile[] = [];
  const problems: Problem[] = [];
  const ignored: Ignored[] = [];
  const seen = new Set([identityOf(root)]);
  // Depth first with an explicit stack (a deep tree must not grow the call stack). A folder
  // reached through a link waits until every real folder is read, so a file is named by its real
  // path when it has one, and a link back into the tree (or to itself) adds nothing.
  const folders = [''];
  const linkedFolders: { name: string; identity: string }[] = [];
  for (;;) {
    let relative = folders.pop();
    while (relative === undefined && linkedFolders.length > 0) {
      const link = linkedFolders.shift()!;
      if (seen.has(link.identity)) continue;
      seen.add(link.identity);
      relative = link.name;
    }
    if (relative === undefined) break;
    const entries = await readdir(path.join(folder, relative), { withFileTypes: true }).catch((err: unknown) => {
      const reason = reasonOf(err);
      if (relative === '') throw new InputError(`Não foi possível ler a pasta ${quote(folder)}: ${reason}.`);
      problems.push({ name: relative!, erro: `Não foi possível ler a pasta: ${reason}.`, kind: 'pasta' });
      return [];
    });
    for (const entry of entries) {
      if (skipped(entry.name)) continue;
      const name = relative === '' ? entry.name : `${relative}/${entry.name}`;
      const format = retornoFormat(entry.name);
      if (entry.isDirectory()) {
        // Its identity, so no link leads into it again (a stat that fails shows again at readdir).
        const info = await stat(path.join(folder, name)).catch(() => null);
        if (info !== null && seen.has(identityOf(info))) continue;
        if (info !== null) seen.add(identityOf(info));
        folders.push(name);
        continue;
      }
      if (!entry.isSymbolicLink() && format === null) {
        if (entry.isFile()) ignored.push(await ignoredFile(name, path.join(folder, name)));
        continue;
      }
      // A link (followed) or a return: what it is decides what is done with it.
      let info: Stats;
      try {
        info = await stat(path.join(folder, name));
      } catch (err) {
        // A broken link that is not named as a return is not a return either.
        const reason =
          entry.isSymbolicLink() && errnoCode(err) === 'ENOENT' ? 'link simbólico para um arquivo que não existe' : reasonOf(err);
        if (format !== null) problems.push({ name, erro: `Não foi possível ler o arquivo: ${reason}.`, kind: 'arquivo' });
        continue;
      }
      if (info.isDirectory()) linkedFolders.push({ name, identity: identityOf(info) });
      else if (format === null) {
        if (info.isFile()) ignored.push(await ignoredFile(name, path.join(folder, name)));
      } else if (info.isFile()) files.push({ name, path: path.join(folder, name), format, identity: identityOf(info), size: info.size });
      // A FIFO or a device named like a return: reading it could block the batch forever.
      else problems.push({ name, erro: 'Não é um arquivo comum.', kind: 'arquivo' });
    }
  }
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { files, problems, ignored };
}
