// COLUMNS_FILE (SPEC §1.2): an operator's additions to the column names and field labels the
// core recognises, read and validated once at start by every process that runs jobs (API with
// the embedded pool, worker, CLI), so they all recognise the same headers.
import { readFile } from 'node:fs/promises';
import { ROLES } from '../core/retorno/index.js';
import type { Chave } from '../core/types.js';
import type { VocabularyAdditions } from '../core/vocabulary.js';
import { ConfigError } from './config.js';

const CHAVES: readonly Chave[] = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function names(value: unknown, where: string, fail: (why: string) => never): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item.trim() !== '')) {
    return fail(`${where} must be a list of non-empty texts`);
  }
  return value as string[];
}

/** The additions in `file`; `{}` when no file is set. Throws ConfigError naming the problem. */
export async function loadColumnsFile(file: string | null): Promise<VocabularyAdditions> {
  if (file === null) return {};
  const fail = (why: string): never => {
    throw new ConfigError(`COLUMNS_FILE ${file}: ${why}`);
  };
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return fail(`cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    return fail(`invalid JSON (${(err as Error).message})`);
  }
  if (!isObject(value)) return fail('must be a JSON object');
  const roles: Record<string, string[]> = {};
  const chave: Record<string, string[]> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (key === 'chave') {
      if (!isObject(entry)) return fail('"chave" must be an object of label lists');
      for (const [name, labels] of Object.entries(entry)) {
        if (!(CHAVES as readonly string[]).includes(name)) fail(`unknown chave "${name}" (expected one of ${CHAVES.join(', ')})`);
        chave[name] = names(labels, `"chave"."${name}"`, fail);
      }
    } else if ((ROLES as readonly string[]).includes(key)) {
      roles[key] = names(entry, `"${key}"`, fail);
    } else {
      fail(`unknown key "${key}" (expected one of ${[...ROLES, 'chave'].join(', ')})`);
    }
  }
  return { roles, chave };
}
