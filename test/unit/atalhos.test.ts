// The core's shortcuts for values already in INEP's shape (issue 58: names and dates are most of a
// return's divergences) against the full rules they skip: the same answer for every input tried.
import { describe, expect, it } from 'vitest';
import { inepNome, inepNomeCompleto, parseDataBr, parseDataBrCompleto } from '@censo/shared';

/** A deterministic generator (mulberry32), so a failure names its input again on every run. */
function random(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    let t = (state += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

describe('inepNome: a name already written as the layout writes it is its own answer', () => {
  it('gives what the full pass gives, on names of every shape', () => {
    const rnd = random(58);
    const alphabet = ['A', 'B', 'Z', 'M', ' ', ' ', '  ', 'a', 'É', 'ç', "'", '-', '.', '\u00a0', 'Ø', 'ß', '\t', '1'];
    const values = [
      '',
      ' ',
      'A',
      'ANA',
      'ANA SILVA',
      ' ANA',
      'ANA ',
      'ANA  SILVA',
      'A'.repeat(100),
      'A'.repeat(101),
      `${'A'.repeat(99)} B`,
    ];
    for (let i = 0; i < 20_000; i++) {
      const length = rnd(12) === 0 ? 95 + rnd(10) : rnd(24);
      values.push(Array.from({ length }, () => alphabet[rnd(rnd(3) === 0 ? alphabet.length : 5)]).join(''));
    }
    for (const value of values) expect([value, inepNome(value)]).toEqual([value, inepNomeCompleto(value)]);
  });
});

describe('parseDataBr: a date written DD/MM/YYYY is its own answer when it names a day', () => {
  it('gives what the full rules give, for every day of 1899–2101 and impossible ones', () => {
    const values: string[] = [];
    for (let year = 1899; year <= 2101; year++) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) values.push(`${String(day).padStart(2, '0')}/${String(month).padStart(2, '0')}/${year}`);
      }
    }
    values.push(' 01/02/2010 ', '1/2/2010', '01/02/10', '2010-02-01', '01022010', '99/99/9999', '00/00/0000');
    for (const value of values) expect([value, parseDataBr(value)]).toEqual([value, parseDataBrCompleto(value)]);
  });
});
