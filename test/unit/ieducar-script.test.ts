// The i-Educar script's text (issue 46) without a database: its parts in order, literals that no
// value breaks, comments no value ends early, the same text for the same input, one change for a
// person listed by several schools and none for a person the Receita contradicts; and `censo
// ieducar`'s handler on a return. Running it against i-Educar's tables: test/integration/ieducar.test.ts.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IEDUCAR_PREVIEW_END, ieducarScript, ieducarScriptText, slugOf, sqlLiteral, type IeducarDivergencia } from '@censo/shared';
import { ieducar, sqlOutput } from '../../cli/src/ieducar.js';
import { fixtureCases } from '../helpers/fixtures.js';

const OPTIONS = { userName: 'Secretaria', origin: 'teste' };

const d = (
  codigo: string,
  chave: IeducarDivergencia['chave'],
  enviado: string,
  correto: string,
  extra: Partial<IeducarDivergencia> = {},
): IeducarDivergencia => ({
  codigo_na_escola: codigo,
  linha: '2',
  campo: String(chave),
  enviado,
  correto,
  is_filiacao: false,
  chave,
  correcao: 'arquivo',
  ...extra,
});

/** The VALUES rows of the transaction's INSERT. */
const insertedRows = (script: string) =>
  script
    .slice(script.indexOf('INSERT INTO censo_correcao'))
    .split('\n')
    .slice(1)
    .filter((line) => line.startsWith('  ('));

describe('sqlLiteral', () => {
  it.each([
    ['abc', "'abc'"],
    ["D'ÁVILA", "'D''ÁVILA'"],
    ['a\\b', "E'a\\\\b'"],
    ["x\\'; --", "E'x\\\\''; --'"],
    ['nul\0here', "'nulhere'"],
  ])('%j → %s', (value, literal) => expect(sqlLiteral(value)).toBe(literal));
});

describe('slugOf (pessoa.slug, as Str::slug)', () => {
  it.each([
    ["MARIA D'ÁVILA SOUZA", 'maria davila souza'],
    ['  Ana-Júlia  Straße ', 'ana julia strasse'],
    ['JOÃO 2º', 'joao 2o'],
  ])('%j → %j', (name, slug) => expect(slugOf(name)).toBe(slug));
});

describe('ieducarScript', () => {
  it('writes header, skipped list, preview, then one transaction, and the same text every time', async () => {
    const input = [d('101', 'nome', 'MARIA', 'MARIA SOUZA'), d('101', 'sexo' as never, '1', '2', { chave: null, correcao: 'formulario' })];
    const script = await ieducarScriptText(input, OPTIONS);
    expect(await ieducarScriptText(input, OPTIONS)).toBe(script);
    expect(script).not.toMatch(/\b20\d\d-\d\d-\d\d\b|\d\d\/\d\d\/20\d\d/);
    const at = (text: string) => {
      const index = script.indexOf(text);
      expect(index, text).toBeGreaterThanOrEqual(0);
      return index;
    };
    const order = [
      at('-- Gerado pelo censo-api'),
      at('psql -v ON_ERROR_STOP=1'),
      at('Nunca altera o cadastro da mãe ou do pai'),
      at('-- Divergências que o script não aplica'),
      at('--   código "101" linha 2, sexo:'),
      at('BEGIN READ ONLY;'),
      at('ROLLBACK;'),
      at(`\n${IEDUCAR_PREVIEW_END}`),
      at('\nBEGIN;\n'),
      at(`SET LOCAL "audit.context" = '{"user_id":0,"user_name":"Secretaria","origin":"teste"}';`),
      at('UPDATE cadastro.pessoa AS p'),
      at('COMMIT;'),
    ];
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(script.match(/^BEGIN( READ ONLY)?;$/gm)).toHaveLength(2);
    expect(script.match(/^COMMIT;/gm)).toHaveLength(1);
    expect(insertedRows(script)).toEqual([
      "  (1, 101, 'nome', 'MARIA', 'MARIA SOUZA', 'MARIA', 'MARIA SOUZA', 'MARIA SOUZA', 'maria souza', '');",
    ]);
  });

  it('no value ends a comment early: a line break in a skipped divergence stays in its comment line', async () => {
    const script = await ieducarScriptText([d('X\nDROP TABLE cadastro.pessoa;', 'nome', 'A\r\nB', 'C')], OPTIONS);
    const lines = script.split('\n');
    expect(lines.some((line) => line.startsWith('DROP'))).toBe(false);
    expect(lines.filter((line) => line.includes('DROP TABLE'))).toEqual([expect.stringMatching(/^-- {3}código "X\\nDROP TABLE/)]);
  });

  it('one change for a person several schools list; none for a person with two Receita values', async () => {
    const script = await ieducarScriptText(
      [
        d('201', 'data_nascimento', '01/02/1980', '02/02/1980', { referencia: 'A' }),
        d('201', 'data_nascimento', '01/02/1980', '1980-02-02', { referencia: 'B' }),
        d('202', 'nome', 'ANA', 'ANA LIMA', { referencia: 'A' }),
        d('202', 'nome', 'ANA', 'ANA SILVA', { referencia: 'B' }),
      ],
      OPTIONS,
    );
    expect(insertedRows(script)).toEqual([
      "  (1, 201, 'data_nascimento', '01/02/1980', '02/02/1980', '1980-02-01', '1980-02-02', '1980-02-02', NULL, 'A, B');",
    ]);
    expect(script.split('\n').filter((line) => line.includes('valores diferentes da Receita Federal'))).toHaveLength(2);
  });

  it('skips a code that is not an idpes, an INEP id never sent, and a CPF the school already had', async () => {
    const script = await ieducarScriptText(
      [
        d('12345678901', 'nome', 'A', 'B'),
        d('7', 'inep', '', '123456789012'),
        d('8', 'cpf', '52998224725', '11144477735', { correcao: 'formulario' }),
        d('00000009', 'cpf', '', '111.444.777-35'),
      ],
      OPTIONS,
    );
    expect(script).toContain('não é um idpes do i-Educar');
    expect(script).toContain('O envio não tinha código INEP');
    expect(script).toContain('(regra 10 do CPF)');
    expect(insertedRows(script)).toEqual(["  (1, 9, 'cpf', '', '111.444.777-35', '', '11144477735', '11144477735', NULL, '');"]);
  });

  it('with nothing to apply, a preview that says so and no transaction', async () => {
    const script = await ieducarScriptText([d('1', 'nome_mae', 'A', 'B', { correcao: 'receita', is_filiacao: true })], OPTIONS);
    expect(script).toContain("SELECT 'Nenhuma correção a aplicar no i-Educar.' AS aviso;");
    expect(script).not.toMatch(/^BEGIN/m);
  });

  it('streams from an async source', async () => {
    async function* source() {
      yield d('1', 'nome', 'A', 'A B');
    }
    const chunks: string[] = [];
    for await (const chunk of ieducarScript(source(), OPTIONS)) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.join('')).toBe(await ieducarScriptText([d('1', 'nome', 'A', 'A B')], OPTIONS));
  });
});

describe('censo ieducar (the handler)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'censo-ieducar-cli-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes the script of the return’s divergences to -o', async () => {
    const basico = fixtureCases().find((c) => c.name === 'basico')!;
    const output = path.join(dir, 'saida.sql');
    await ieducar({ retorno: basico.retorno.json, output, vocabulary: {}, usuario: 'Maria' });
    const expected = (basico.expectedDivergencias as { divergencias: IeducarDivergencia[] }).divergencias.map((item) => ({
      ...item,
      arquivo: 'retorno.json',
    }));
    expect(await readFile(output, 'utf8')).toBe(
      await ieducarScriptText(expected, { userName: 'Maria', origin: 'censo ieducar retorno.json' }),
    );
  });

  it('refuses an -o that is not .sql, and a file that is not a return', async () => {
    expect(() => sqlOutput('x.txt')).toThrow('-o "x.txt": o script do i-Educar é SQL; use -o "x.sql".');
    expect(sqlOutput('-')).toBeUndefined();
    expect(sqlOutput('saida')).toBe('saida');
    await expect(ieducar({ retorno: path.join(dir, 'nada.csv'), output: undefined, vocabulary: {} })).rejects.toThrow();
  });
});
