// COLUMNS_FILE (SPEC §1.2): an operator's additions to the column names and field labels the
// core recognises, read and validated once at start by every process that runs jobs (API with
// the embedded pool, worker, CLI), so they all recognise the same headers.
import { labelKey } from '../core/divergencias.js';
import { normalize } from '../core/normalize.js';
import { ROLES } from '../core/retorno/index.js';
import type { Chave } from '../core/types.js';
import type { VocabularyAdditions } from '../core/vocabulary.js';
import { ConfigError } from './config.js';
import { readSettingJson } from './setting-file.js';

const CHAVES: readonly Chave[] = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A list of texts, each of which still says something once compared the way the core compares it
 * (`key`): a name that normalises to nothing (an accent alone, spaces) could never match a header
 * the operator meant, and an empty key would match every empty header.
 */
function names(value: unknown, where: string, key: (name: string) => string, what: string, fail: (why: string) => never): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item.trim() !== '')) {
    return fail(`${where} must be a list of non-empty texts`);
  }
  const empty = (value as string[]).findIndex((item) => key(item) === '');
  if (empty >= 0) fail(`${where}: item ${empty + 1} is empty once normalised (${what})`);
  return value as string[];
}

/** The additions in `file`; `{}` when no file is set. Throws ConfigError naming the problem. */
export async function loadColumnsFile(file: string | null): Promise<VocabularyAdditions> {
  if (file === null) return {};
  const source = `COLUMNS_FILE ${file}`;
  const fail = (why: string): never => {
    throw new ConfigError(`${source}: ${why}`);
  };
  const value = await readSettingJson(file, source);
  if (!isObject(value)) return fail('must be a JSON object');
  const roles: Record<string, string[]> = {};
  const chave: Record<string, string[]> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (key === 'chave') {
      if (!isObject(entry)) return fail('"chave" must be an object of label lists');
      for (const [name, labels] of Object.entries(entry)) {
        if (!(CHAVES as readonly string[]).includes(name)) fail(`unknown chave "${name}" (expected one of ${CHAVES.join(', ')})`);
        chave[name] = names(labels, `"chave"."${name}"`, labelKey, 'case, accents, spaces, numbering', fail);
      }
    } else if ((ROLES as readonly string[]).includes(key)) {
      roles[key] = names(entry, `"${key}"`, normalize, 'case, accents, spaces', fail);
    } else {
      fail(`unknown key "${key}" (expected one of ${[...ROLES, 'chave'].join(', ')})`);
    }
  }
  return { roles, chave };
}
