// SPEC §6: invalid settings stop the process at start with a one-line message and exit 1.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../../services/api/dist/main.js', import.meta.url));
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-startup-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        API_KEY: 'k',
        HOST: '127.0.0.1',
        PORT: '0',
        UPLOAD_DIR: path.join(dir, 'up'),
        LOG_LEVEL: 'silent',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A process that started instead of failing is stopped: the assertions below then fail.
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

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

  it('UPLOAD_TIMEOUT_MS not a number', async () => {
    const { code, stderr } = await start({ UPLOAD_TIMEOUT_MS: 'soon' });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('censo-api: UPLOAD_TIMEOUT_MS must be a whole number, got "soon"');
  });
});
