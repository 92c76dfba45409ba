// Return-file readers (SPEC §1.2): one row stream whatever the format, in sheet/array order.
import type { RetornoRow, StoredRetorno } from '../types.js';
import { itemsOf } from '../item-stream.js';
import { readJsonBatches } from './json/index.js';
import { readXlsxBatches } from './xlsx/index.js';

import { BUILTIN_COLUMN_NAMES, type ColumnNames } from './columns.js';

export { roleOf, ROLES, ColumnNames, type Role, type RoleSynonyms } from './columns.js';
export { codigoInepDe, codigoInepDoTitulo, isEscolaKey } from './escola.js';

export interface ReadRetornoOptions {
  readonly signal?: AbortSignal;
  /** Column names to recognise (default: SPEC §1.2's synonyms). */
  readonly names?: ColumnNames;
  /**
   * Told the INEP code of the school the file is about (issue 54: a JSON wrapper's `escola`, an
   * xlsx title row), after its last row and only when it carries one.
   */
  readonly escola?: (codigo: string) => void;
}

/**
 * The data rows of a stored return file. Throws BadInputError (`badInput.unreadableRetorno`)
 * for any file that cannot be read as a return; stopping early (`break`, `return()`) or
 * aborting closes the file.
 */
export function readRetorno(file: StoredRetorno, options: ReadRetornoOptions = {}): AsyncGenerator<RetornoRow, void, undefined> {
  return itemsOf(readRetornoBatches(file, options));
}

/** The same rows, a chunk's worth at a time (a job's pipeline, which needs no promise per row). */
export function readRetornoBatches(file: StoredRetorno, options: ReadRetornoOptions = {}): AsyncGenerator<RetornoRow[], void, undefined> {
  const names = options.names ?? BUILTIN_COLUMN_NAMES;
  return file.format === 'json'
    ? readJsonBatches(file.path, options.signal, names, options.escola)
    : readXlsxBatches(file.path, options.signal, names, options.escola);
}
