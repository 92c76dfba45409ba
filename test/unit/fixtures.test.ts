// Every fixture folder, both return formats, both job kinds, through runJob (and so through
// readRetorno): the result file must be exactly the expected response body.
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob, type RetornoFormat } from '@censo/shared';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const cases = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name);

let out: string;
beforeAll(async () => {
  out = await mkdtemp(path.join(os.tmpdir(), 'censo-fixtures-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

function txtOf(folder: string): string {
  const name = readdirSync(folder).find((f) => f.toLowerCase().endsWith('.txt'));
  if (!name) throw new Error(`no .txt in ${folder}`);
  return path.join(folder, name);
}

async function json(file: string): Promise<unknown> {
  return JSON.parse(await readFile(file, 'utf8'));
}

describe.each(cases)('fixture %s', (caso) => {
  const folder = path.join(FIXTURES, caso);
  const formats = (['json', 'xlsx'] as RetornoFormat[]).filter((f) => existsSync(path.join(folder, `retorno.${f}`)));

  it.each(formats)('divergencias from retorno.%s', async (format) => {
    const resultPath = path.join(out, `${caso}-${format}-divergencias.json`);
    const result = await runJob({ kind: 'divergencias', retorno: { path: path.join(folder, `retorno.${format}`), format }, resultPath });
    const expected = (await json(path.join(folder, 'expected-divergencias.json'))) as { divergencias: unknown[] };
    // The workbook's title row says `Escola 12345678` (the census file's record 00); the JSON array names no school (issue 54).
    const escola = format === 'xlsx' ? '12345678' : null;
    expect(result).toEqual({ ok: true, count: expected.divergencias.length, bytes: (await stat(resultPath)).size, escola });
    expect(await json(resultPath)).toEqual(expected);
  });

  it.each(formats)('pessoas from retorno.%s', async (format) => {
    const resultPath = path.join(out, `${caso}-${format}-pessoas.json`);
    const result = await runJob({
      kind: 'retorno-rf',
      retorno: { path: path.join(folder, `retorno.${format}`), format },
      txt: { path: txtOf(folder) },
      resultPath,
    });
    const expected = (await json(path.join(folder, 'expected-pessoas.json'))) as { pessoas: unknown[] };
    expect(result).toEqual({ ok: true, count: expected.pessoas.length, bytes: (await stat(resultPath)).size });
    expect(await json(resultPath)).toEqual(expected);
  });
});
