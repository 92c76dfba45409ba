// SPEC §6: invalid settings stop the process at start with a one-line message and exit 1.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiExpectingExit } from '../helpers/processes.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-startup-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const start = (env: Record<string, string>) => startApiExpectingExit(env, { uploadDir: path.join(dir, 'up') });

describe('invalid settings stop the start with one line', () => {
  it('QUERIES_FILE missing, even without DATABASE_URL', async () => {
    const { code, stderr } = await start({ QUERIES_FILE: path.join(dir, 'missing.json') });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/QUERIES_FILE .*missing\.json: cannot be read \(ENOENT\)/);
  });

  it('QUERIES_FILE invalid, even without DATABASE_URL', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ name: 'x', sql: 'SELECT 1', key: 'id', columns: ['id'], filters: [], extra: true }));
    const { code, stderr } = await start({ QUERIES_FILE: file });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/unknown property "extra"/);
  });

  it('COLUMNS_FILE invalid', async () => {
    const file = path.join(dir, 'columns.json');
    await writeFile(file, JSON.stringify({ mensagens: ['Descrição'] }));
    const { code, stderr } = await start({ COLUMNS_FILE: file });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      `censo-api: could not start: COLUMNS_FILE ${file}: unknown key "mensagens" (expected one of registro, linha, codigo, campo, mensagem, conteudo, chave)`,
    );
  });

  it.each([
    ['only an accent', { mensagem: ['Descrição', '\u0301'] }, '"mensagem": item 2 is empty once normalised (case, accents, spaces)'],
    ['only spaces (refused before too)', { codigo: ['\u00a0 \t'] }, '"codigo" must be a list of non-empty texts'],
    ['accents and spaces', { campo: [' \u0303\u0301 '] }, '"campo": item 1 is empty once normalised (case, accents, spaces)'],
    [
      'a label that is only a numbering',
      { chave: { cpf: ['CPF do aluno', '5 - '] } },
      '"chave"."cpf": item 2 is empty once normalised (case, accents, spaces, numbering)',
    ],
  ])('COLUMNS_FILE with a name that normalises to nothing (%s)', async (_name, content, why) => {
    const file = path.join(dir, 'columns-empty.json');
    await writeFile(file, JSON.stringify(content));
    const { code, stderr } = await start({ COLUMNS_FILE: file });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`censo-api: could not start: COLUMNS_FILE ${file}: ${why}`);
  });

  it.each([
    ['a FIFO nobody writes to', 'fifo'],
    ['a folder', 'folder'],
    ['a character device', '/dev/zero'],
  ])('COLUMNS_FILE that is %s: refused at once, not a hang', async (_name, kind) => {
    let file = kind;
    if (kind === 'fifo') {
      file = path.join(dir, 'columns.fifo');
      execFileSync('mkfifo', [file]);
    } else if (kind === 'folder') {
      file = dir;
    }
    const { code, stderr } = await start({ COLUMNS_FILE: file });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`censo-api: could not start: COLUMNS_FILE ${file}: is not a regular file`);
  });

  it('QUERIES_FILE that is a FIFO: refused at once, not a hang', async () => {
    const file = path.join(dir, 'queries.fifo');
    execFileSync('mkfifo', [file]);
    const { code, stderr } = await start({ QUERIES_FILE: file });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`censo-api: could not start: QUERIES_FILE ${file}: is not a regular file`);
  });

  it('UPLOAD_TIMEOUT_MS not a number', async () => {
    const { code, stderr } = await start({ UPLOAD_TIMEOUT_MS: 'soon' });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('censo-api: UPLOAD_TIMEOUT_MS must be a whole number, got "soon"');
  });
});
