// Issues 46 and 56, "the fix where the data lives": the i-Educar files against i-Educar's own
// tables, whole, and its audit triggers (test/fixtures/ieducar-schema.sql) in a throwaway database,
// with persons filled the way i-Educar's forms fill them, run as a DBA runs them (psql -v
// ON_ERROR_STOP=1 -f; through pg when this machine has no psql). After the correction, record 30
// as i-Educar's export builds it carries the Receita's values; one audit row per change, with our
// context, the school and the return, whose before and after differ only in the changed columns; a
// row changed since the return is left alone and reported; the preview and a second run change
// nothing; a value that is no name is never written.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ieducarScriptText, inepNome, sqlNomeCenso, type IeducarDivergencia, type IeducarParte } from '@censo/shared';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.js';

const SCHEMA = fileURLToPath(new URL('../fixtures/ieducar-schema.sql', import.meta.url));
const OPTIONS = {
  userName: "Coordenação do Censo d'Oeste",
  userId: 7,
  origin: 'censo-api: teste',
  escolas: ['35000001'],
  retorno: 'retorno.json',
};

/** Both files of the same divergences. */
const scripts = async (divergencias: IeducarDivergencia[], options = OPTIONS) => {
  const text = (parte: IeducarParte) => ieducarScriptText(parte, divergencias, options);
  return { previa: await text('previa'), correcao: await text('correcao') };
};

const hasPsql = (() => {
  try {
    execFileSync('psql', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function divergencia(
  codigo: string,
  chave: IeducarDivergencia['chave'],
  enviado: string,
  correto: string,
  correcao: IeducarDivergencia['correcao'] = 'arquivo',
): IeducarDivergencia {
  const campo = { cpf: 'Número do CPF', nome: 'Nome completo', data_nascimento: 'Data de nascimento', inep: 'Identificação única (INEP)' };
  return {
    codigo_na_escola: codigo,
    linha: '',
    campo: chave === null ? 'Sexo' : ((campo as Record<string, string>)[chave] ?? 'Filiação 1'),
    enviado,
    correto,
    is_filiacao: chave === 'nome_mae' || chave === 'nome_pai',
    chave,
    correcao,
    referencia: 'escola 35000001',
    arquivo: 'retorno.json',
  };
}

/** What the return says: persons 101 (student) and 102 (teacher) get fixed, 103 changed since. */
const RETORNO: IeducarDivergencia[] = [
  divergencia('101', 'nome', 'MARIA DAVILA', "MARIA D'ÁVILA SOUZA"),
  divergencia('101', 'data_nascimento', '14/03/2014', '15/03/2014'),
  divergencia('101', 'inep', '111111111111', '111111111112'),
  divergencia('101', 'nome_mae', 'ANA SOUZA', 'ANA DE SOUZA', 'receita'),
  divergencia('0102', 'cpf', '', '012.345.678-90'),
  divergencia('102', 'inep', '222222222222', '222222222223'),
  divergencia('102', 'nome', 'JOAO LIMA', 'JOÃO DE LIMA'),
  divergencia('103', 'nome', 'JOSE SANTOS', 'JOSE DOS SANTOS'),
  divergencia('105', 'nome', 'PEDRO SOUZA', 'PEDRO SOUSA', 'formulario'),
  divergencia('105', 'nome', 'PEDRO SOUZA', 'Pedro  Souza', 'grafia'),
  divergencia('ABC-9', 'data_nascimento', '01/01/2010', '02/01/2010'),
];

/**
 * The persons as i-Educar's forms leave them (clsPessoa_::cadastra: situacao P, origem U, operacao
 * I, the user's idpes in idpes_cad, the slug; clsFisica::cadastra: origem M, operacao I, and the
 * form's other fields filled), plus the signed-in user's own person (idpes 1). 102 is kept in
 * capitals, as an install with `uppercase_names` on keeps names.
 */
const SEED = `
INSERT INTO cadastro.escolaridade (idesco, descricao) VALUES (6, 'Ensino médio completo');
INSERT INTO cadastro.estado_civil (ideciv, descricao) VALUES (1, 'Solteiro(a)');
INSERT INTO pmieducar.religiao (cod_religiao, ref_usuario_cad, nm_religiao, data_cadastro) VALUES (1, 1, 'Católica', now());
INSERT INTO cadastro.pessoa (idpes, nome, idpes_cad, data_cad, tipo, situacao, origem_gravacao, operacao, email, slug) VALUES
  (1, 'Administrador', NULL, '2024-01-02 08:00', 'F', 'P', 'U', 'I', 'admin@escola.gov.br', 'administrador'),
  (101, 'Maria D''Ávila', 1, '2024-01-02 09:00', 'F', 'P', 'U', 'I', NULL, 'maria davila'),
  (102, 'JOÃO LIMA', 1, '2024-01-02 09:01', 'F', 'P', 'U', 'I', 'joao@escola.gov.br', 'joao lima'),
  (103, 'José Santos Filho', 1, '2024-01-02 09:02', 'F', 'P', 'U', 'I', NULL, 'jose santos filho'),
  (104, 'Ana Souza', 1, '2024-01-02 09:03', 'F', 'P', 'U', 'I', NULL, 'ana souza'),
  (105, 'Pedro Souza', 1, '2024-01-02 09:04', 'F', 'P', 'U', 'I', NULL, 'pedro souza');
INSERT INTO cadastro.fisica (idpes, data_nasc, sexo, idpes_mae, idesco, ideciv, nacionalidade, idmun_nascimento, idpes_cad, data_cad,
                             origem_gravacao, operacao, cpf, ref_cod_religiao, nis_pis_pasep, sus, falecido, ativo,
                             zona_localizacao_censo, nome_social, pais_residencia, localizacao_diferenciada, observacao) VALUES
  (1, '1980-05-05', 'M', NULL, 6, 1, 1, 4927, NULL, '2024-01-02 08:00', 'M', 'I', 52998224725, NULL, NULL, NULL, false, 1, 1, NULL, 76, NULL, NULL),
  (101, '2014-03-14', 'F', 104, NULL, NULL, 1, 4927, 1, '2024-01-02 09:00', 'M', 'I', NULL, 1, 12345678901, '898001234567890', false, 1, 1, NULL, 76, 7, 'Alérgica a amendoim'),
  (102, '1980-01-01', 'M', NULL, 6, 1, 1, 4927, 1, '2024-01-02 09:01', 'M', 'I', 0, NULL, NULL, NULL, false, 1, 2, NULL, 76, NULL, NULL),
  (103, '2012-05-05', 'M', NULL, NULL, NULL, 1, 4927, 1, '2024-01-02 09:02', 'M', 'I', 52998224725, NULL, NULL, NULL, false, 1, 1, 'Zé', 76, NULL, NULL),
  (104, '1985-07-07', 'F', NULL, 6, 1, 1, 4927, 1, '2024-01-02 09:03', 'M', 'I', NULL, NULL, NULL, NULL, false, 1, 1, NULL, 76, NULL, NULL),
  (105, '2015-02-02', 'M', 104, NULL, NULL, 1, 4927, 1, '2024-01-02 09:04', 'M', 'I', NULL, NULL, NULL, NULL, false, 1, 1, NULL, 76, NULL, NULL);
INSERT INTO pmieducar.aluno (cod_aluno, ref_idpes, data_cadastro) VALUES (1, 101, now()), (2, 103, now()), (3, 105, now());
INSERT INTO pmieducar.servidor (cod_servidor, ref_cod_instituicao, carga_horaria, data_cadastro) VALUES (102, 1, 40, now());
INSERT INTO modules.educacenso_cod_aluno (cod_aluno, cod_aluno_inep, created_at) VALUES (1, 111111111111, now()), (2, 333333333333, now());
INSERT INTO modules.educacenso_cod_docente (cod_servidor, cod_docente_inep, created_at) VALUES (102, 222222222222, now());
`;

/**
 * Record 30's fields 3–7 and 9 as i-Educar's export builds them (EducacensoRepository's
 * getCommonDataForRecord30 / getStudentDataForRecord30 / getEmployeeDataForRecord30, and
 * Registro30::getInep: a student's INEP id, else the teacher's). The name is upper-cased and
 * unaccented in PHP afterwards: inepNome here.
 */
const RECORD_30 = `
SELECT fisica.idpes::text AS codigo,
       (CASE WHEN aluno.cod_aluno IS NOT NULL THEN educacenso_cod_aluno.cod_aluno_inep ELSE educacenso_cod_docente.cod_docente_inep END)::text AS inep,
       NULLIF(lpad(fisica.cpf::text, 11, '0'), '00000000000') AS cpf,
       pessoa.nome AS nome,
       to_char(fisica.data_nasc, 'DD/MM/YYYY') AS data_nascimento,
       pessoa_mae.nome AS filiacao1
  FROM cadastro.fisica
  JOIN cadastro.pessoa ON pessoa.idpes = fisica.idpes
  LEFT JOIN cadastro.pessoa AS pessoa_mae ON fisica.idpes_mae = pessoa_mae.idpes
  LEFT JOIN pmieducar.aluno ON aluno.ref_idpes = fisica.idpes
  LEFT JOIN modules.educacenso_cod_aluno ON educacenso_cod_aluno.cod_aluno = aluno.cod_aluno
  LEFT JOIN modules.educacenso_cod_docente ON educacenso_cod_docente.cod_servidor = fisica.idpes
 WHERE fisica.idpes IN (101, 102, 103, 105)
 ORDER BY fisica.idpes`;

const TABLES = [
  'cadastro.escolaridade',
  'cadastro.estado_civil',
  'pmieducar.religiao',
  'cadastro.pessoa',
  'cadastro.fisica',
  'pmieducar.aluno',
  'pmieducar.servidor',
  'modules.educacenso_cod_aluno',
  'modules.educacenso_cod_docente',
  'public.ieducar_audit',
];

let server: TestPostgres;
let admin: pg.Client;
let db: pg.Client;
let dbUrl: string;
let dbName: string;
let scratch: string;

beforeAll(async () => {
  server = await startTestPostgres();
  dbName = `ieducar_${randomBytes(6).toString('hex')}`;
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(server.url);
  url.pathname = `/${dbName}`;
  dbUrl = url.href;
  db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  await db.query(await readFile(SCHEMA, 'utf8'));
  scratch = await mkdtemp(path.join(os.tmpdir(), 'censo-ieducar-'));
});

afterAll(async () => {
  await db?.end();
  if (dbName) await admin?.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin?.end();
  await server?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

beforeEach(async () => {
  // TRUNCATE fires no row trigger; the seed's own audit rows are the setup's, not the script's.
  await db.query(`TRUNCATE ${TABLES.join(', ')} RESTART IDENTITY CASCADE`);
  await db.query(SEED);
  await db.query('TRUNCATE public.ieducar_audit RESTART IDENTITY');
});

interface Run {
  /** What the script's SELECTs printed. */
  readonly output: string;
  /** Its NOTICEs (the report of what was left alone). */
  readonly notices: string;
}

/** The script as a DBA runs it: `psql -v ON_ERROR_STOP=1 -f`, a session of its own. */
async function runScript(sql: string): Promise<Run> {
  if (hasPsql) {
    const file = path.join(scratch, `${randomBytes(4).toString('hex')}.sql`);
    await writeFile(file, sql);
    const { stdout, stderr } = await promisify(execFile)('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-d', dbUrl, '-f', file]);
    return { output: stdout, notices: stderr };
  }
  // Plain SQL throughout, so the simple query protocol runs it whole, as psql would.
  const client = new pg.Client({ connectionString: dbUrl });
  const notices: string[] = [];
  client.on('notice', (notice) => notices.push(notice.message ?? ''));
  await client.connect();
  try {
    const results = (await client.query(sql)) as unknown as pg.QueryResult[];
    return { output: JSON.stringify(results.map((r) => r.rows)), notices: notices.join('\n') };
  } finally {
    await client.end();
  }
}

/** Every table of the schema, rows in key order: what "nothing changed" compares. */
async function dump(): Promise<string> {
  const parts: string[] = [];
  for (const table of TABLES) {
    const { rows } = await db.query(`SELECT to_jsonb(t) AS row FROM ${table} AS t`);
    parts.push(
      `${table}: ${JSON.stringify(rows.map((r: { row: unknown }) => r.row).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))))}`,
    );
  }
  return parts.join('\n');
}

async function record30() {
  const { rows } = await db.query(RECORD_30);
  return (rows as Array<Record<string, string | null>>).map((row) => ({ ...row, nome: inepNome(row.nome ?? '') }));
}

const auditRows = async () =>
  (
    await db.query<{
      schema: string;
      table: string;
      context: Record<string, unknown>;
      before: Record<string, unknown>;
      after: Record<string, unknown>;
    }>('SELECT "schema", "table", context, before, after FROM public.ieducar_audit ORDER BY id')
  ).rows;

/** The columns whose values differ between an audit row's before and after. */
const changedColumns = (row: { before: Record<string, unknown>; after: Record<string, unknown> }) =>
  Object.keys(row.after)
    .filter((key) => JSON.stringify(row.before[key]) !== JSON.stringify(row.after[key]))
    .sort();

describe('the i-Educar files', () => {
  it('fix record 30 at its sources, one audit row per change with our context, only the changed columns, and report what changed since', async () => {
    const { correcao } = await scripts(RETORNO);
    const run = await runScript(correcao);

    expect(await record30()).toEqual([
      { codigo: '101', inep: '111111111112', cpf: null, nome: 'MARIA DAVILA SOUZA', data_nascimento: '15/03/2014', filiacao1: 'Ana Souza' },
      { codigo: '102', inep: '222222222223', cpf: '01234567890', nome: 'JOAO DE LIMA', data_nascimento: '01/01/1980', filiacao1: null },
      // Changed in i-Educar since the return: left as it is.
      {
        codigo: '103',
        inep: '333333333333',
        cpf: '52998224725',
        nome: 'JOSE SANTOS FILHO',
        data_nascimento: '05/05/2012',
        filiacao1: null,
      },
      // Skipped (formulario, grafia): untouched; the mother's row shared with 101 too.
      { codigo: '105', inep: null, cpf: null, nome: 'PEDRO SOUZA', data_nascimento: '02/02/2015', filiacao1: 'Ana Souza' },
    ]);
    const { rows: pessoa } = await db.query('SELECT idpes::int, nome, slug FROM cadastro.pessoa WHERE idpes IN (101, 102) ORDER BY idpes');
    // The Receita's name in the case i-Educar keeps each: as typed for 101, in capitals for 102.
    expect(pessoa).toEqual([
      { idpes: 101, nome: "Maria D'Ávila Souza", slug: 'maria davila souza' },
      { idpes: 102, nome: 'JOÃO DE LIMA', slug: 'joao de lima' },
    ]);

    const audit = await auditRows();
    expect(audit.map((a) => `${a.schema}.${a.table}`)).toEqual([
      'cadastro.pessoa',
      'cadastro.fisica',
      'modules.educacenso_cod_aluno',
      'cadastro.fisica',
      'modules.educacenso_cod_docente',
      'cadastro.pessoa',
    ]);
    // Who, and from which school and return: i-Educar's audit screen shows the origin.
    for (const row of audit) {
      expect(row.context).toEqual({ user_id: 7, user_name: OPTIONS.userName, origin: 'censo-api: teste: escola 35000001 / retorno.json' });
    }
    expect(audit.map(changedColumns)).toEqual([
      ['data_rev', 'nome', 'slug'],
      ['data_nasc'],
      ['cod_aluno_inep', 'updated_at'],
      ['cpf'],
      ['cod_docente_inep', 'updated_at'],
      ['data_rev', 'nome', 'slug'],
    ]);
    expect(audit[0]!.before).toMatchObject({ idpes: 101, nome: "Maria D'Ávila", situacao: 'P', origem_gravacao: 'U', idpes_cad: 1 });
    expect(audit[1]!.after).toMatchObject({
      idpes: 101,
      data_nasc: '2014-03-15',
      observacao: 'Alérgica a amendoim',
      sus: '898001234567890',
    });
    expect(audit[0]!.after).toMatchObject({ idpes: 101, nome: "Maria D'Ávila Souza" });
    expect(audit[3]!.after).toMatchObject({ idpes: 102, cpf: 1234567890 });

    expect(run.notices).toContain('Não alterado: idpes 103 (nome): alterado desde o envio');
    expect(run.notices).toContain('Correções aplicadas: 6; já corrigidas: 0; não alteradas: 1.');
    expect(run.output).toMatch(/103 .*alterado desde o envio/);
  });

  it('the preview reads, shows the person’s name in i-Educar beside the idpes, and changes nothing', async () => {
    const { previa } = await scripts(RETORNO);
    const before = await dump();
    const run = await runScript(previa);
    expect(await dump()).toBe(before);
    for (const expected of [
      /101 .*Maria D'Ávila .*nome .*Maria D'Ávila Souza .*aplicar/,
      /102 .*JOÃO LIMA .*nome .*JOÃO DE LIMA .*aplicar/,
      /102 .*JOÃO LIMA .*cpf .*aplicar/,
      /101 .*data_nascimento .*14\/03\/2014 .*15\/03\/2014 .*15\/03\/2014 .*aplicar/,
      /103 .*José Santos Filho .*nome .*alterado desde o envio/,
    ]) {
      expect(run.output).toMatch(expected);
    }
  });

  it('run twice, the second run changes nothing and leaves no audit row', async () => {
    const { correcao } = await scripts(RETORNO);
    await runScript(correcao);
    const afterFirst = await dump();
    const second = await runScript(correcao);
    expect(await dump()).toBe(afterFirst);
    expect(await auditRows()).toHaveLength(6);
    expect(second.notices).toContain('Correções aplicadas: 0; já corrigidas: 6; não alteradas: 1.');
  });

  it('one change for a person several schools list; none for a person the Receita gives two values', async () => {
    const { correcao } = await scripts([
      { ...divergencia('101', 'data_nascimento', '14/03/2014', '15/03/2014'), referencia: 'A' },
      { ...divergencia('101', 'data_nascimento', '14/03/2014', '15/03/2014'), referencia: 'B' },
      // A third school sent another date: once the first two are applied, nothing is left to do.
      { ...divergencia('101', 'data_nascimento', '13/03/2014', '15/03/2014'), referencia: 'C' },
      { ...divergencia('102', 'nome', 'JOAO LIMA', 'JOAO DE LIMA'), referencia: 'A' },
      { ...divergencia('102', 'nome', 'JOAO LIMA', 'JOAO LIMA NETO'), referencia: 'B' },
    ]);
    const run = await runScript(correcao);
    expect(run.notices).toContain('Correções aplicadas: 2; já corrigidas: 1; não alteradas: 2.');
    expect(run.notices).toContain('Não alterado: idpes 102 (nome): valores diferentes da Receita Federal');
    expect(await auditRows()).toHaveLength(1);
    expect((await db.query('SELECT nome FROM cadastro.pessoa WHERE idpes = 102')).rows).toEqual([{ nome: 'JOÃO LIMA' }]);
  });

  it('skips, and lists with the reason, a code that is not an idpes and every divergence that is not the file’s to fix', async () => {
    const { correcao } = await scripts(RETORNO);
    const listed = correcao.split('\n').filter((line) => line.startsWith('--   ['));
    expect(listed).toHaveLength(4);
    expect(listed.find((line) => line.includes('"ABC-9"'))).toContain('não é um idpes do i-Educar');
    expect(listed.find((line) => line.includes('Filiação 1'))).toContain(
      'o cidadão precisa atualizar o cadastro do CPF na Receita Federal',
    );
    // A mother's row is reached only through fisica.idpes_mae: no statement of the script names it.
    const statements = correcao
      .split('\n')
      .filter((line) => !line.startsWith('--'))
      .join('\n');
    expect(statements).not.toMatch(/idpes_mae|idpes_pai/);
  });

  it('a Receita value that is no name is listed and never written; a line break breaks no preview', async () => {
    const hostile = [
      divergencia('101', 'nome', 'MARIA DAVILA', "MARIA D'ÁVILA'; DROP TABLE cadastro.pessoa; --"),
      divergencia('102', 'nome', 'JOAO LIMA', 'JOAO\n-- FIM DA PRÉVIA\nLIMA'),
      divergencia('103', 'nome', 'JOSE SANTOS', 'JOSE \\ $$ SANTOS'),
      // A sent value with a line break on a change that applies: shown on one line.
      divergencia('104', 'data_nascimento', '07/07/1985', '08/07/1985'),
      { ...divergencia('999', null, "x'\n); DROP TABLE cadastro.fisica; --", 'y\\', 'formulario') },
    ];
    const options = { ...OPTIONS, userName: 'O\'Brien "\\"' };
    const { previa, correcao } = await scripts(hostile, options);
    const preview = await runScript(previa);
    expect(preview.output).toMatch(/104 .*Ana Souza .*data_nascimento .*aplicar/);
    const run = await runScript(correcao);
    expect(run.notices).toContain('Correções aplicadas: 1; já corrigidas: 0; não alteradas: 0.');
    const { rows } = await db.query('SELECT idpes::int, nome FROM cadastro.pessoa WHERE idpes IN (101, 102, 103) ORDER BY idpes');
    expect(rows).toEqual([
      { idpes: 101, nome: "Maria D'Ávila" },
      { idpes: 102, nome: 'JOÃO LIMA' },
      { idpes: 103, nome: 'José Santos Filho' },
    ]);
    expect((await auditRows())[0]!.context).toMatchObject({ user_name: 'O\'Brien "\\"' });
    expect((await db.query('SELECT count(*)::int AS n FROM cadastro.fisica')).rows).toEqual([{ n: 6 }]);
  });

  it("compares names under the census's writing rule exactly as inepNome writes them", async () => {
    const names = [
      "  josé  d'ávila-Çaçá ",
      'ÑANDÚ Ø\tÜBER',
      'a'.repeat(120) + ' b',
      'São João 3º',
      'ÅNGSTRÖM Ÿves',
      'Straße Æsir Łódź Þór',
      'Şükrü Ğürsel Ŋoma ĸ',
    ];
    const { rows } = await db.query(`SELECT ${names.map((name, i) => `${sqlNomeCenso(`$${i + 1}::text`)} AS n${i}`).join(', ')}`, names);
    expect(Object.values(rows[0] as Record<string, string>)).toEqual(names.map((name) => inepNome(name)));
  });
});
