// Differential tests of the hand-written readers against the libraries they replace, so a reader
// other than their author can trust them: random workbooks written and read back by exceljs, and
// random JSON parsed by JSON.parse, must give the same rows as the core's streaming readers.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import ExcelJS from 'exceljs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRetorno, roleOf, ROLES, type RetornoRow, type Role } from '@censo/shared';

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'censo-differential-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function coreRows(file: string, format: 'json' | 'xlsx'): Promise<RetornoRow[]> {
  const rows: RetornoRow[] = [];
  for await (const row of readRetorno({ path: file, format })) rows.push(row);
  return rows;
}

// Header names as returns write them: any accepted synonym, in any case, with or without accents.
const HEADERS: Record<Role, string[]> = {
  registro: ['Registro', 'TIPO DE REGISTRO', 'Reg'],
  linha: ['Linha', 'Número da linha', 'linha do arquivo'],
  codigo: ['Código na Escola', 'Código da pessoa física no sistema próprio', 'CODIGO PESSOA'],
  campo: ['Campo', 'Nome do campo', 'Descrição do campo'],
  mensagem: ['Mensagem', 'Mensagem de erro', 'Descrição'],
  conteudo: ['Conteúdo', 'Valor do campo', 'conteudo'],
};

const text = fc.string({
  unit: fc.constantFrom('a', 'Z', 'é', 'Ç', ' ', '-', '&', '<', '>', '"', "'", '5', '|', 'ã', '—', '😀'),
  minLength: 1,
  maxLength: 12,
});

type Cell =
  | { kind: 'text'; value: string }
  | { kind: 'int'; value: number }
  | { kind: 'decimal'; value: number }
  | { kind: 'rich'; parts: string[] }
  | { kind: 'formula'; result: string }
  | { kind: 'date'; y: number; m: number; d: number };

const cell: fc.Arbitrary<Cell> = fc.oneof(
  { weight: 5, arbitrary: text.map((value) => ({ kind: 'text' as const, value })) },
  fc.integer({ min: 0, max: 99_999_999 }).map((value) => ({ kind: 'int' as const, value })),
  fc.integer({ min: 1, max: 99_999 }).map((value) => ({ kind: 'decimal' as const, value: value / 100 })),
  fc.array(text, { minLength: 1, maxLength: 3 }).map((parts) => ({ kind: 'rich' as const, parts })),
  text.map((result) => ({ kind: 'formula' as const, result })),
  fc
    .record({ y: fc.integer({ min: 1950, max: 2030 }), m: fc.integer({ min: 1, max: 12 }), d: fc.integer({ min: 1, max: 28 }) })
    .map((v) => ({ kind: 'date' as const, ...v })),
);

/** What a cell must read as (SPEC §1.2): text as is, numbers without `.0`, dates DD/MM/YYYY. */
function expected(c: Cell): string {
  switch (c.kind) {
    case 'text':
      return c.value;
    case 'int':
    case 'decimal':
      return String(c.value);
    case 'rich':
      return c.parts.join('');
    case 'formula':
      return c.result;
    case 'date':
      return `${String(c.d).padStart(2, '0')}/${String(c.m).padStart(2, '0')}/${c.y}`;
  }
}

function excelValue(c: Cell): ExcelJS.CellValue {
  switch (c.kind) {
    case 'text':
      return c.value;
    case 'int':
    case 'decimal':
      return c.value;
    case 'rich':
      return { richText: c.parts.map((part, i) => ({ text: part, font: i % 2 ? { bold: true } : {} })) };
    case 'formula':
      return { formula: 'CONCATENATE("x")', result: c.result };
    case 'date':
      return new Date(Date.UTC(c.y, c.m - 1, c.d));
  }
}

const sheetSpec = fc.record({
  titleRows: fc.integer({ min: 0, max: 4 }),
  roles: fc
    .shuffledSubarray([...ROLES], { minLength: 3 })
    .filter((r) => r.includes('codigo') && r.includes('campo') && r.includes('mensagem')),
  synonym: fc.nat(),
  extra: fc.integer({ min: 0, max: 2 }),
  rows: fc.array(fc.array(fc.option(cell, { nil: null, freq: 4 }), { minLength: 8, maxLength: 8 }), { maxLength: 15 }),
});

describe('xlsx: the core reader agrees with exceljs', () => {
  it('on random workbooks (title rows, header synonyms, every cell kind, several sheets)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sheetSpec, { minLength: 1, maxLength: 2 }), async (sheets) => {
        const workbook = new ExcelJS.Workbook();
        const oracle: RetornoRow[] = [];
        sheets.forEach((spec, s) => {
          const sheet = workbook.addWorksheet(`Plan${s + 1}`);
          for (let t = 0; t < spec.titleRows; t++) sheet.addRow([`Relatório ${t}`]);
          const headers = [
            ...spec.roles.map((role) => HEADERS[role][spec.synonym % HEADERS[role].length]!),
            ...Array.from({ length: spec.extra }, (_, i) => `Outra ${i}`),
          ];
          sheet.addRow(headers);
          for (const values of spec.rows) {
            const row = sheet.addRow(values.slice(0, headers.length).map((c) => (c === null ? null : excelValue(c))));
            values.slice(0, headers.length).forEach((c, i) => {
              if (c?.kind === 'date') row.getCell(i + 1).numFmt = 'dd/mm/yyyy';
            });
            const byRole = new Map<Role, string>();
            spec.roles.forEach((role, i) => {
              const c = values[i];
              if (c !== null && c !== undefined) byRole.set(role, expected(c));
            });
            const mapped = spec.roles.map((role) => byRole.get(role) ?? '');
            if (mapped.every((v) => v.trim() === '')) continue; // blank in every mapped column: skipped
            const has = (role: Role) => spec.roles.includes(role);
            oracle.push({
              registro: has('registro') ? (byRole.get('registro') ?? '') : null,
              linha: has('linha') ? (byRole.get('linha') ?? '') : null,
              codigo: byRole.get('codigo') ?? '',
              campo: byRole.get('campo') ?? '',
              mensagem: byRole.get('mensagem') ?? '',
              conteudo: byRole.get('conteudo') ?? '',
            });
          }
          // Sanity: the header this test wrote is one the core recognises.
          expect(headers.slice(0, spec.roles.length).map((h) => roleOf(h))).toEqual(spec.roles);
        });
        const file = path.join(dir, `w${n++}.xlsx`);
        await workbook.xlsx.writeFile(file);

        // exceljs reading back its own file is the reference for the cell values.
        const reread = new ExcelJS.Workbook();
        await reread.xlsx.readFile(file);
        expect(reread.worksheets).toHaveLength(sheets.length);
        expect(await coreRows(file, 'xlsx')).toEqual(oracle);
      }),
      { numRuns: 40 },
    );
  });
});

describe('json: the core scanner agrees with JSON.parse', () => {
  const value = fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 10 }) },
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 2 }),
  );

  /** SPEC §1.2 for JSON: strings as they are, numbers as their decimal text, booleans as words, anything else empty. */
  function asText(v: unknown): string {
    if (typeof v === 'string') return v;
    if (typeof v === 'number') return String(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    return '';
  }

  it('on random arrays and wrapped objects, with escapes, a BOM and any spacing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .shuffledSubarray([...ROLES], { minLength: 3 })
          .filter((r) => r.includes('codigo') && r.includes('campo') && r.includes('mensagem')),
        fc.array(fc.array(value, { minLength: 6, maxLength: 6 }), { minLength: 1, maxLength: 12 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom(0, 2),
        async (roles, rows, wrapped, bom, indent) => {
          const objects = rows.map((values) => Object.fromEntries(roles.map((role, i) => [HEADERS[role][0]!, values[i]])));
          const document = wrapped ? { escola: 'E', totais: [1, 2], erros: objects } : objects;
          // JSON.stringify escapes control characters; \u escapes for the rest are added at random spots.
          let text = JSON.stringify(document, null, indent).replace(/é/g, '\\u00e9');
          if (bom) text = `\ufeff${text}`;
          const file = path.join(dir, `j${n++}.json`);
          await writeFile(file, text);

          const parsed = JSON.parse(text.replace(/^\ufeff/, '')) as unknown;
          const list = (Array.isArray(parsed) ? parsed : (parsed as { erros: Record<string, unknown>[] }).erros) as Record<
            string,
            unknown
          >[];
          const has = (role: Role) => roles.includes(role);
          const oracle = list
            .map((o) => {
              const get = (role: Role) => (has(role) ? asText(o[HEADERS[role][0]!]) : null);
              return {
                registro: get('registro'),
                linha: get('linha'),
                codigo: get('codigo') ?? '',
                campo: get('campo') ?? '',
                mensagem: get('mensagem') ?? '',
                conteudo: get('conteudo') ?? '',
              };
            })
            .filter((r) => [r.registro, r.linha, r.codigo, r.campo, r.mensagem, r.conteudo].some((v) => v !== null && v.trim() !== ''));
          expect(await coreRows(file, 'json')).toEqual(oracle);
        },
      ),
      { numRuns: 100 },
    );
  });
});
