// The words the core recognises in a return: column names (SPEC §1.2) and field labels (SPEC §2),
// the built-in ones plus what an operator adds with COLUMNS_FILE, so a return in a layout nobody
// has seen yet can be read without a release.
import { FieldLabels, type LabelSynonyms } from './divergencias.js';
import { ColumnNames, type RoleSynonyms } from './retorno/columns.js';

/** COLUMNS_FILE's content: `{ "<role>": ["<header>", …], "chave": { "<chave>": ["<label>", …] } }`. */
export interface VocabularyAdditions {
  readonly roles?: RoleSynonyms;
  readonly chave?: LabelSynonyms;
}

export interface Vocabulary {
  readonly columns: ColumnNames;
  readonly labels: FieldLabels;
}

export function createVocabulary(additions: VocabularyAdditions = {}): Vocabulary {
  return { columns: new ColumnNames(additions.roles), labels: new FieldLabels(additions.chave) };
}
