// The i-Educar files' text (issues 46, 56, 59) without a database: the preview and the correction
// in their parts, literals that no value breaks, comments no value ends early, nothing a value
// could put on a line of its own, the same text for the same input, names that are no names only
// listed, names in the case people type them, the file's name, the txt's persons only, memory that
// does not grow with the divergences; and `censo ieducar`'s handler on a return and its txt.
// Running them against i-Educar's tables: test/integration/ieducar.test.ts.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IEDUCAR_MOTIVOS,
  ieducarFileName,
  ieducarScript,
  ieducarScriptText,
  nomeComoDigitado,
  nomeReceita,
  readTxtEnviado,
  slugOf,
  sqlLiteral,
  sqlShown,
  type IeducarDivergencia,
} from '@censo/shared';
import { ieducar } from '../../cli/src/ieducar.js';

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

/** The VALUES rows of the preview or of the transaction's INSERT. */
const valuesRows = (script: string) =>
  script
    .split('\n')
    .filter((line) => line.startsWith('  ('))
    .map((line) => line.replace(/[,;]$/, ''));

/** Lines that are not comments: the SQL a client runs. */
const statements = (script: string) =>
  script
    .split('\n')
    .filter((line) => !line.startsWith('--'))
    .join('\n');

describe('sqlLiteral and sqlShown', () => {
  it.each([
    ['abc', "'abc'"],
    ["D'ÁVILA", "'D''ÁVILA'"],
    ['a\\b', "E'a\\\\b'"],
    ["x\\'; --", "E'x\\\\''; --'"],
    ['nul\0here', "'nulhere'"],
  ])('sqlLiteral %j → %s', (value, literal) => expect(sqlLiteral(value)).toBe(literal));

  it.each([
    ['A\nB', 'A\\nB'],
    ['A\r\n-- FIM', 'A\\r\\n-- FIM'],
    ['A\u2028B\u0085C\u0007', 'A\\u2028B\\u0085C\\u0007'],
  ])('sqlShown %j stays on one line', (value, shown) => expect(sqlShown(value)).toBe(shown));
});

describe('names', () => {
  it.each([
    ["MARIA D'ÁVILA SOUZA", 'maria davila souza'],
    ['  Ana-Júlia  Straße ', 'ana julia strasse'],
    ['JOÃO 2º', 'joao 2o'],
  ])('slugOf %j → %j', (name, slug) => expect(slugOf(name)).toBe(slug));

  it.each([
    ["MARIA D'ÁVILA DOS SANTOS", "Maria D'Ávila dos Santos"],
    ['DE SOUZA E SILVA', 'De Souza e Silva'],
    ['ANA-JÚLIA DA CONCEIÇÃO', 'Ana-Júlia da Conceição'],
    ["JOANA D'ARC O'BRIEN", "Joana D'Arc O'Brien"],
    ['ÍTALO ÉRICO', 'Ítalo Érico'],
  ])('nomeComoDigitado %j → %j', (nome, digitado) => expect(nomeComoDigitado(nome)).toBe(digitado));

  it('nomeReceita takes letters, single spaces, an apostrophe and a hyphen, and nothing else', () => {
    expect(nomeReceita("  MARIA  D'ÁVILA-SOUZA ")).toBe("MARIA D'ÁVILA-SOUZA");
    for (const bad of [
      'MARIA\nSOUZA',
      'MARIA\tSOUZA',
      'MARIA\\',
      'MARIA; DROP',
      'MARIA $1',
      'MARIA "X"',
      'MARIA `X`',
      'MARIA “X”',
      'MARIA 2',
      '',
      "'",
      'A\u0007B',
    ]) {
      expect(nomeReceita(bad), JSON.stringify(bad)).toBeNull();
    }
  });
});

describe('ieducarFileName', () => {
  it('names the school, the return (or the batch) and the part', () => {
    expect(ieducarFileName('previa', { escolas: ['35000001'], retorno: 'retorno 2025.json' })).toBe(
      'ieducar-35000001-retorno_2025-previa.sql',
    );
    expect(ieducarFileName('correcao', { escolas: ['1', '2'], retorno: 'r.xlsx' })).toBe('ieducar-2-escolas-r-correcao.sql');
    expect(ieducarFileName('previa', { lote: 'abc' })).toBe('ieducar-lote-abc-previa.sql');
    expect(ieducarFileName('previa', { retorno: '../../etc/passwd' })).toBe('ieducar-etc_passwd-previa.sql');
  });
});

describe('ieducarScript', () => {
  it('the preview reads only; the correction is one transaction; both name the school and the return; the same text every time', async () => {
    const input = [d('101', 'nome', 'MARIA', 'MARIA SOUZA'), d('101', 'sexo' as never, '1', '2', { chave: null, correcao: 'formulario' })];
    const options = { ...OPTIONS, escolas: ['35000001'], retorno: 'retorno.json' };
    const previa = await ieducarScriptText('previa', input, options);
    const correcao = await ieducarScriptText('correcao', input, options);
    expect(await ieducarScriptText('previa', input, options)).toBe(previa);
    for (const script of [previa, correcao]) {
      expect(script).not.toMatch(/\b20\d\d-\d\d-\d\d\b|\d\d\/\d\d\/20\d\d/);
      expect(script).toContain('-- Escola (código INEP): 35000001\n');
      expect(script).toContain('-- Retorno do Censo: retorno.json\n');
      expect(script).toContain('--   código "101" linha 2, sexo:');
      // No psql command: pgAdmin and any client run them.
      expect(statements(script)).not.toMatch(/^\\/m);
    }
    expect(previa).toContain('-- PRÉVIA, só leitura');
    expect(statements(previa)).toMatch(/^BEGIN READ ONLY;$/m);
    expect(statements(previa)).not.toMatch(/\b(UPDATE|INSERT|DELETE|COMMIT|CREATE|SET LOCAL)\b/);
    expect(statements(previa)).toContain('"nome no i-Educar"');

    expect(correcao).toContain('-- CORREÇÃO: este arquivo GRAVA');
    expect(correcao.match(/^BEGIN;$/gm)).toHaveLength(1);
    expect(correcao.match(/^COMMIT;$/gm)).toHaveLength(1);
    expect(correcao.trimEnd().endsWith('COMMIT;')).toBe(true);
    expect(correcao).toContain(`SET LOCAL "audit.context" = '{"user_id":0,"user_name":"Secretaria","origin":"teste"}';`);
    expect(valuesRows(correcao)).toEqual([
      "  (1, 101, 'nome', 'MARIA', 'MARIA SOUZA', 'MARIA', 'Maria Souza', 'MARIA SOUZA', 'MARIA SOUZA', 'maria souza', '')",
    ]);
    expect(valuesRows(previa)).toEqual(valuesRows(correcao));
  });

  it('no value ends a comment early or puts anything on a line of its own', async () => {
    const input = [
      d('X\nDROP TABLE cadastro.pessoa;', 'nome', 'A\r\nB', 'C'),
      d('101', 'nome', 'MARIA', 'MARIA\n-- FIM DA PRÉVIA'),
      d('102', 'nome', 'ANA\n-- FIM DA PRÉVIA\nSOUZA', 'ANA SOUZA', { referencia: 'escola\nDROP', arquivo: 'r\u2028.json' }),
    ];
    for (const parte of ['previa', 'correcao'] as const) {
      const script = await ieducarScriptText(parte, input, OPTIONS);
      const lines = script.split('\n');
      expect(lines.some((line) => /^(DROP|-- FIM)/.test(line))).toBe(false);
      expect(lines.filter((line) => line.includes('DROP TABLE'))).toEqual([expect.stringMatching(/^-- {3}código "X\\nDROP TABLE/)]);
      expect(lines.filter((line) => line.includes('FIM DA PRÉVIA'))).toHaveLength(2);
      expect(script).not.toMatch(/[\u2028\u2029\u0085\r]/);
      expect(valuesRows(script)).toEqual([
        "  (1, 102, 'nome', E'ANA\\\\n-- FIM DA PRÉVIA\\\\nSOUZA', 'ANA SOUZA', 'ANA FIM DA PREVIASOUZA', 'Ana Souza', 'ANA SOUZA', 'ANA SOUZA', 'ana souza', E'escola\\\\nDROP / r\\\\u2028.json')",
      ]);
    }
  });

  it('a Receita value that is no name is listed, never written', async () => {
    const hostile = ['MARIA\\', 'MARIA; DROP TABLE x', 'MARIA $$', 'MARIA "X"', 'MARIA\u0007', 'MARIA\tSOUZA', 'MARIA `X`'];
    const script = await ieducarScriptText(
      'correcao',
      hostile.map((correto, i) => d(String(100 + i), 'nome', 'MARIA', correto)),
      OPTIONS,
    );
    expect(script.split('\n').filter((line) => line.includes(IEDUCAR_MOTIVOS.naoNome))).toHaveLength(hostile.length);
    expect(script).toContain("SELECT 'Nenhuma correção a aplicar no i-Educar.' AS aviso;");
    expect(statements(script)).not.toMatch(/^BEGIN/m);
  });

  it('writes a row for each school that lists a person: the database tells repeats and contradictions apart', async () => {
    const script = await ieducarScriptText(
      'correcao',
      [
        d('201', 'data_nascimento', '01/02/1980', '02/02/1980', { referencia: 'A' }),
        d('201', 'data_nascimento', '01/02/1980', '1980-02-02', { referencia: 'B' }),
      ],
      OPTIONS,
    );
    expect(valuesRows(script)).toEqual([
      "  (1, 201, 'data_nascimento', '01/02/1980', '02/02/1980', '1980-02-01', '1980-02-02', '1980-02-02', '1980-02-02', NULL::text, 'A')",
      "  (2, 201, 'data_nascimento', '01/02/1980', '1980-02-02', '1980-02-01', '1980-02-02', '1980-02-02', '1980-02-02', NULL::text, 'B')",
    ]);
    expect(script).toContain("'valores diferentes da Receita Federal'");
  });

  it('skips a code that is not an idpes, an INEP id never sent, a CPF the school already had, a sent name i-Educar cannot hold', async () => {
    const script = await ieducarScriptText(
      'correcao',
      [
        d('12345678901', 'nome', 'A', 'B'),
        d('7', 'inep', '', '123456789012'),
        d('8', 'cpf', '52998224725', '11144477735', { correcao: 'formulario' }),
        d('10', 'nome', 'A'.repeat(151), 'ANA'),
        d('00000009', 'cpf', '', '111.444.777-35'),
      ],
      OPTIONS,
    );
    expect(script).toContain('não é um idpes do i-Educar');
    expect(script).toContain('O envio não tinha código INEP');
    expect(script).toContain('(regra 10 do CPF)');
    expect(script).toContain(IEDUCAR_MOTIVOS.enviadoInvalido);
    expect(valuesRows(script)).toEqual([
      "  (1, 9, 'cpf', '', '111.444.777-35', '', '11144477735', '11144477735', '11144477735', NULL::text, '')",
    ]);
  });

  it('with nothing to apply, a file that says so and no transaction', async () => {
    for (const parte of ['previa', 'correcao'] as const) {
      const script = await ieducarScriptText(parte, [d('1', 'nome_mae', 'A', 'B', { correcao: 'receita', is_filiacao: true })], OPTIONS);
      expect(script).toContain("SELECT 'Nenhuma correção a aplicar no i-Educar.' AS aviso;");
      expect(statements(script)).not.toMatch(/^BEGIN/m);
    }
  });

  it('reads an async source twice, as it streams', async () => {
    let reads = 0;
    async function* source() {
      reads++;
      yield d('1', 'nome', 'A', 'A B');
    }
    const chunks: string[] = [];
    for await (const chunk of ieducarScript('correcao', source, OPTIONS)) chunks.push(chunk);
    expect(reads).toBe(2);
    expect(chunks.join('')).toBe(await ieducarScriptText('correcao', [d('1', 'nome', 'A', 'A B')], OPTIONS));
  });

  it('holds no divergence: 800 fat divergences (values of ~16,000 characters) leave the heap as it was', async () => {
    // A garbage collector on demand, so the heap measured is what the script holds.
    // (The flag exposes `gc` to contexts created after it: a new one hands it over.)
    v8.setFlagsFromString('--expose-gc');
    const gc = (globalThis as { gc?: () => void }).gc ?? (runInNewContext('gc') as () => void);
    const fat = (i: number, what: string) => `${what} ${String(i).padStart(4, '0')} ${'X'.repeat(16_000)}`;
    /** The shape: fat school codes, fat sent and correct values, fat batch labels. */
    function* source(): Generator<IeducarDivergencia> {
      for (let i = 0; i < 800; i++) {
        const referencia = { referencia: fat(i, 'ESCOLA'), arquivo: fat(i, 'ARQUIVO') };
        if (i % 4 === 0) yield d(fat(i, 'CODIGO'), 'nome', fat(i, 'ENVIADO'), fat(i, 'CORRETO'), referencia);
        else if (i % 4 === 1) yield d(String(1000 + i), 'nome', fat(i, 'ENVIADO'), 'MARIA DA SILVA', referencia);
        else yield d(String(1000 + i), 'data_nascimento', '01/02/1980', '02/02/1980', referencia);
      }
    }
    let sourceBytes = 0;
    for (const item of source()) sourceBytes += JSON.stringify(item).length;
    for (const parte of ['previa', 'correcao'] as const) {
      gc();
      const before = process.memoryUsage().heapUsed;
      let peak = 0;
      let written = 0;
      let chunks = 0;
      for await (const chunk of ieducarScript(parte, source, OPTIONS)) {
        written += chunk.length;
        if (++chunks % 100 === 0) {
          gc();
          peak = Math.max(peak, process.memoryUsage().heapUsed - before);
        }
      }
      gc();
      peak = Math.max(peak, process.memoryUsage().heapUsed - before);
      // Everything went through: the script is at least as large as what it read.
      expect(written).toBeGreaterThan(sourceBytes / 2);
      // Holding the divergences (or the changes) would keep a good share of them.
      expect(peak, `${parte}: ${peak} bytes held after reading ${sourceBytes}`).toBeLessThan(sourceBytes / 10);
    }
  });
});

describe('the txt sent with the return', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'censo-ieducar-cli-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const TXT = [
    '00|35000001|1|03/02/2025|19/12/2025|ESCOLA|||',
    '30|35000001|101|111111111111|52998224725|MARIA DAVILA|14/03/2014|1|ANA SOUZA||2|3',
    '30|35000001|102||11144477735|JOAO LIMA|01/01/1980|1|||2|3',
    '99|',
    '',
  ].join('\r\n');

  const row = (linha: string, codigo: string, campo: string, conteudo: string) => ({
    Registro: '30',
    Linha: linha,
    'Código na Escola': codigo,
    Campo: campo,
    Mensagem: 'O campo não está de acordo com a base da Receita Federal.',
    Conteúdo: conteudo,
  });

  it('changes only its persons, under their code and with the value it sent', async () => {
    const txt = path.join(dir, 'censo.txt');
    await writeFile(txt, TXT, 'latin1');
    const enviado = await readTxtEnviado(txt);
    expect(enviado.escolas).toEqual(['35000001']);
    const script = await ieducarScriptText(
      'correcao',
      [
        d('101', 'nome', 'MARIA DAVILA', "MARIA D'ÁVILA", { linha: '2' }),
        // The txt's line 3 is person 102: a return naming 101 there reaches nobody.
        d('101', 'data_nascimento', '14/03/2014', '15/03/2014', { linha: '3' }),
        // Not in the txt at all: any person of the database whose value the uploader knows.
        d('555', 'nome', 'PREFEITO', 'OUTRO NOME', { linha: '' }),
        // In the txt, but not with this sent value.
        d('102', 'nome', 'JOSE LIMA', 'JOAO DE LIMA', { linha: '' }),
      ],
      { ...OPTIONS, txt: enviado },
    );
    expect(valuesRows(script)).toEqual([
      "  (1, 101, 'nome', 'MARIA DAVILA', 'MARIA D''ÁVILA', 'MARIA DAVILA', 'Maria D''Ávila', 'MARIA D''ÁVILA', 'MARIA DAVILA', 'maria davila', 'escola 35000001')",
    ]);
    expect(script.split('\n').filter((line) => line.includes(IEDUCAR_MOTIVOS.foraDoTxt))).toHaveLength(3);
  });

  it('censo ieducar writes the preview and the correction into -o, named for the school and the return', async () => {
    const txt = path.join(dir, 'censo.txt');
    await writeFile(txt, TXT, 'latin1');
    const retorno = path.join(dir, 'retorno escola.json');
    await writeFile(
      retorno,
      JSON.stringify([
        row('2', '101', 'Nome completo', 'MARIA DAVILA -- MARIA DAVILA SOUZA'),
        row('', '555', 'Nome completo', 'PREFEITO -- OUTRO'),
      ]),
    );
    const out = await mkdtemp(path.join(dir, 'saida-'));
    const files = await ieducar({ retorno, txt, pasta: out, vocabulary: {}, usuario: 'Maria' });
    expect(files.map((file) => path.basename(file))).toEqual([
      'ieducar-35000001-retorno_escola-previa.sql',
      'ieducar-35000001-retorno_escola-correcao.sql',
    ]);
    expect((await readdir(out)).sort()).toEqual(files.map((file) => path.basename(file)).sort());
    const correcao = await readFile(files[1]!, 'utf8');
    expect(correcao).toContain('"origin":"censo ieducar"');
    expect(valuesRows(correcao)).toEqual([
      "  (1, 101, 'nome', 'MARIA DAVILA', 'MARIA DAVILA SOUZA', 'MARIA DAVILA', 'Maria Davila Souza', 'MARIA DAVILA SOUZA', 'MARIA DAVILA SOUZA', 'maria davila souza', 'escola 35000001 / retorno escola.json')",
    ]);
    expect(correcao).toMatch(/código "555".*não tem esta pessoa/);
  });

  it('refuses an -o that is not a folder, and a file that is not a return', async () => {
    const txt = path.join(dir, 'censo.txt');
    await writeFile(txt, TXT, 'latin1');
    await expect(ieducar({ retorno: path.join(dir, 'x.json'), txt, pasta: txt, vocabulary: {} })).rejects.toThrow(
      /não é uma pasta; o censo ieducar grava nela os dois arquivos/,
    );
    await expect(ieducar({ retorno: path.join(dir, 'nada.csv'), txt, pasta: dir, vocabulary: {} })).rejects.toThrow();
  });
});
