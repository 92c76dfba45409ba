// SPEC §1.1: a census text saved by a Windows editor as "Unicode" (UTF-16, with or without a BOM)
// is decoded as UTF-16 and gives the same persons and the same corrected file as the original.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob, sniffUtf16, type JobData } from '@censo/shared';
import { fixtureCases } from '../helpers/fixtures.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-utf16-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function utf16(text: string, order: 'le' | 'be', bom: boolean): Buffer {
  const le = Buffer.from((bom ? '\ufeff' : '') + text, 'utf16le');
  if (order === 'le') return le;
  const be = Buffer.alloc(le.length);
  for (let i = 0; i + 1 < le.length; i += 2) {
    be[i] = le[i + 1]!;
    be[i + 1] = le[i]!;
  }
  return be;
}

async function run(kind: 'retorno-rf' | 'censo-corrigido', txt: string, name: string): Promise<Buffer> {
  const resultPath = path.join(dir, `${name}.out`);
  const data: JobData = { kind, retorno: { path: basico.retorno.json, format: 'json' }, txt: { path: txt }, resultPath };
  const result = await runJob(data);
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return readFile(resultPath);
}

describe.each([
  ['le', true],
  ['be', true],
  ['le', false],
  ['be', false],
] as const)('UTF-16 %s, BOM %s', (order, bom) => {
  it('is recognised and gives the persons and the corrected file of the original', async () => {
    const original = await readFile(basico.txt);
    const file = path.join(dir, `censo-${order}-${bom}.txt`);
    await writeFile(file, utf16(original.toString('latin1'), order, bom));
    expect(await sniffUtf16(file)).toBe(order === 'le' ? 'utf-16le' : 'utf-16be');

    expect(JSON.parse((await run('retorno-rf', file, `p-${order}-${bom}`)).toString('utf8'))).toEqual(basico.expectedPessoas);
    const corrected = await run('censo-corrigido', file, `c-${order}-${bom}`);
    expect(corrected.equals(await run('censo-corrigido', basico.txt, `c-orig-${order}-${bom}`))).toBe(true);
  });
});

it('does not take UTF-8 or Latin-1 text for UTF-16', async () => {
  expect(await sniffUtf16(basico.txt)).toBeNull();
  const short = path.join(dir, 'short.txt');
  await writeFile(short, Buffer.from([0x33, 0x00]));
  expect(await sniffUtf16(short)).toBeNull();
});
