// Fixture cases copied from the shared material: one folder per case with a census txt, the
// return as .json and .xlsx, and the exact expected response bodies.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES_DIR = fileURLToPath(new URL('../fixtures/', import.meta.url));

export interface FixtureCase {
  readonly name: string;
  readonly dir: string;
  readonly txt: string;
  readonly retorno: { readonly json: string; readonly xlsx: string };
  readonly expectedDivergencias: unknown;
  readonly expectedPessoas: unknown;
}

export function fixtureCases(): FixtureCase[] {
  return readdirSync(FIXTURES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => {
      const dir = path.join(FIXTURES_DIR, entry.name);
      const files = readdirSync(dir);
      const txt = files.find((file) => file.endsWith('.txt'));
      if (!txt) throw new Error(`fixture ${entry.name} has no .txt`);
      const json = (file: string) => JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as unknown;
      return {
        name: entry.name,
        dir,
        txt: path.join(dir, txt),
        retorno: { json: path.join(dir, 'retorno.json'), xlsx: path.join(dir, 'retorno.xlsx') },
        expectedDivergencias: json('expected-divergencias.json'),
        expectedPessoas: json('expected-pessoas.json'),
      };
    });
}

/** A return's JSON text with its rows repeated `copies` times: a large file with known content. */
export function repeatedReturn(retornoJson: string, copies: number): string {
  const rows = JSON.parse(readFileSync(retornoJson, 'utf8')) as unknown[];
  return JSON.stringify(Array.from({ length: copies }, () => rows).flat());
}
