// docs/configuracao.md's table of settings names every environment variable the service reads:
// the names are taken from loadConfig's own source (as compose.test.ts takes them), so a setting
// added without a line in the operators' table fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** Every environment variable loadConfig reads. */
function settingsRead(): string[] {
  const names = [...read('shared/src/runtime/config.ts').matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!);
  return [...new Set(names)].sort();
}

/** The names in the first cell of each row of the settings table (a cell may name several). */
function documented(): Set<string> {
  const doc = read('docs/configuracao.md');
  const start = doc.indexOf('\n## Configurações\n');
  const section = start < 0 ? '' : doc.slice(start, doc.indexOf('\n## ', start + 1));
  const firstCells = [...section.matchAll(/^\| ([^|]+) \|/gm)].map((m) => m[1]!);
  return new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!)));
}

describe('docs/configuracao.md', () => {
  it('finds the settings loadConfig reads', () => {
    expect(settingsRead().length).toBeGreaterThan(40);
  });

  it('has a row for every one of them', () => {
    const table = documented();
    expect(settingsRead().filter((name) => !table.has(name))).toEqual([]);
  });
});
