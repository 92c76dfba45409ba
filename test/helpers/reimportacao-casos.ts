// INEP's re-import rules (2025 layout, record 30 and the general rules) as a table: each case is
// one person of a census file, the return's rows about them, what `correcao` each divergence gets
// from the return alone (POST /api/divergencias-rf) and what the corrected file writes on the
// person's line (POST /api/censo-corrigido), with the count of corrections it leaves out. The
// unit tests, the HTTP tests (both modes) and the CLI tests run the same table (SPEC §11).
import type { Correcao } from '@censo/shared';

export const RF = 'O campo não está de acordo com a base da Receita Federal.';
export const SCHOOL = '00|12345678|ESCOLA ESTADUAL SAO JOSE|4205407';

export interface Pessoa {
  readonly inep?: string;
  readonly cpf?: string;
  readonly nome?: string;
  readonly data?: string;
  readonly mae?: string;
  readonly pai?: string;
}

/** A record 30 of the 2025 layout's first 12 fields (the rest do not matter to the rules). */
export function record30(codigo: string, p: Pessoa = {}): string {
  return [
    '30',
    '12345678',
    codigo,
    p.inep ?? '',
    p.cpf ?? '',
    p.nome ?? 'MARIA DA SILVA',
    p.data ?? '14/03/2014',
    '1',
    p.mae ?? 'ANA DA SILVA',
    p.pai ?? 'JOSE DA SILVA',
    '2',
    '3',
  ].join('|');
}

export interface Row {
  readonly campo: string;
  readonly conteudo: string;
  readonly mensagem?: string;
}

export interface Caso {
  /** The rule, as INEP words it or close to it. */
  readonly regra: string;
  readonly pessoa: Pessoa;
  /** Other record 30 lines of the same file, after the person's (lines 3, 4…). */
  readonly outras?: readonly string[];
  readonly rows: readonly Row[];
  /** Rows about the person at line 3 (code ALU2, the first of `outras`), before or after the others. */
  readonly segunda?: { readonly rows: readonly Row[]; readonly primeiro: boolean };
  /** Each row's `correcao`, from the return alone, in the return's order. */
  readonly correcao: readonly Correcao[];
  /** The person's line in the corrected file: `null` when it is written as sent. */
  readonly linha: Pessoa | null;
  /** Every divergence of the file's persons the corrected file does not write (`grafia` excepted). */
  readonly naoAplicadas: number;
  /** The file writes the person although general rule 25 may refuse them. */
  readonly regra25?: boolean;
}

const MAE = { campo: 'Filiação 1', mensagem: 'Filiação 1 (nome da mãe) não está de acordo com a base da Receita Federal.' };

export const CASOS: readonly Caso[] = [
  {
    regra: 'grafia: só acentos e maiúsculas no nome',
    pessoa: { nome: 'JOAO PEREIRA' },
    rows: [{ campo: 'Nome completo', conteudo: 'JOAO PEREIRA -- João Pereira' }],
    correcao: ['grafia'],
    linha: null,
    naoAplicadas: 0,
  },
  {
    regra: 'grafia: apóstrofo e espaços duplos no nome',
    pessoa: { nome: 'JOAO DAVILA' },
    rows: [{ campo: 'Nome completo', conteudo: "JOAO  DAVILA -- João D'Ávila" }],
    correcao: ['grafia'],
    linha: null,
    naoAplicadas: 0,
  },
  {
    regra: 'grafia: o CPF com pontuação e a data em outro formato',
    pessoa: { cpf: '52998224725' },
    rows: [
      { campo: 'Número do CPF', conteudo: '52998224725 -- 529.982.247-25' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 2014-03-14' },
    ],
    correcao: ['grafia', 'grafia'],
    linha: null,
    naoAplicadas: 0,
  },
  {
    regra: 'nome (regra 7) e data de nascimento (regra 53) de acordo com a Receita: o arquivo os corrige',
    pessoa: {},
    rows: [
      { campo: 'Nome completo', conteudo: 'MARIA DA SILVA -- MARIA DA SILVA SOUZA' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15/03/2014' },
    ],
    correcao: ['arquivo', 'arquivo'],
    linha: { nome: 'MARIA DA SILVA SOUZA', data: '15/03/2014' },
    naoAplicadas: 0,
  },
  {
    regra: 'filiação, regra 4: o INEP grava o nome da mãe da Receita; o arquivo escreve o mesmo na filiação 1',
    pessoa: { mae: 'ANA DA SILVA' },
    rows: [{ ...MAE, conteudo: 'ANA DA SILVA -- Ana Maria da Silva' }],
    correcao: ['educacenso'],
    linha: { mae: 'ANA MARIA DA SILVA' },
    naoAplicadas: 0,
  },
  {
    regra: 'filiação 2: a Receita não guarda o pai; o arquivo não altera a filiação 2',
    pessoa: {},
    rows: [
      {
        campo: 'Filiação 2',
        mensagem: 'Filiação 2 (nome do pai) não está de acordo com a base da Receita Federal.',
        conteudo: 'JOSE DA SILVA -- JOSE DE SOUZA',
      },
    ],
    correcao: ['receita'],
    linha: null,
    naoAplicadas: 1,
  },
  {
    regra: 'CPF, regra 10: um CPF que o Educacenso já tem não muda por migração',
    pessoa: { cpf: '52998224725' },
    rows: [{ campo: 'Número do CPF', conteudo: '52998224725 -- 11144477735' }],
    correcao: ['formulario'],
    linha: null,
    naoAplicadas: 1,
  },
  {
    regra: 'CPF em branco preenchido com o da Receita',
    pessoa: { cpf: '' },
    rows: [{ campo: 'Número do CPF', conteudo: ' -- 11144477735' }],
    correcao: ['arquivo'],
    linha: { cpf: '11144477735' },
    naoAplicadas: 0,
  },
  {
    regra: 'CPF, regra 8: sem o CPF (que o layout não aceita), nome e data de nascimento não são atualizados',
    pessoa: { cpf: '' },
    rows: [
      { campo: 'Número do CPF', conteudo: ' -- 1114447773' },
      { campo: 'Nome completo', conteudo: 'MARIA DA SILVA -- MARIA DA SILVA SOUZA' },
    ],
    correcao: ['formulario', 'formulario'],
    linha: null,
    naoAplicadas: 2,
  },
  {
    regra: 'CPF, regra 7: outra pessoa do arquivo já tem o CPF da Receita (só o txt mostra)',
    pessoa: { cpf: '', inep: '123456789012' },
    outras: [record30('ALU2', { cpf: '11144477735', inep: '123456789013', nome: 'PEDRO LIMA' })],
    rows: [
      { campo: 'Número do CPF', conteudo: ' -- 11144477735' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15/03/2014' },
    ],
    correcao: ['arquivo', 'arquivo'],
    // The CPF stays blank, so rule 8 keeps the birth date out too.
    linha: null,
    naoAplicadas: 2,
  },
  {
    regra: 'CPF, regra 7: a mesma pessoa (mesma identificação Inep) em outra escola do arquivo não é outra pessoa',
    pessoa: { cpf: '', inep: '123456789012' },
    outras: [SCHOOL.replace('12345678', '87654321'), record30('ALU9', { cpf: '11144477735', inep: '123456789012' })],
    rows: [{ campo: 'Número do CPF', conteudo: ' -- 11144477735' }],
    correcao: ['arquivo'],
    linha: { cpf: '11144477735', inep: '123456789012' },
    naoAplicadas: 0,
  },
  {
    regra: 'regra 25: nome, data de nascimento e a filiação 1 como o Educacenso já a tem não descaracterizam; tudo é corrigido',
    pessoa: { mae: 'ANA DA SILVA' },
    rows: [
      { campo: 'Nome completo', conteudo: 'MARIA DA SILVA -- MARIA DA SILVA SOUZA' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15/03/2014' },
      { ...MAE, conteudo: 'ANA DA SILVA -- ANA MARIA DA SILVA' },
    ],
    correcao: ['arquivo', 'arquivo', 'educacenso'],
    linha: { nome: 'MARIA DA SILVA SOUZA', data: '15/03/2014', mae: 'ANA MARIA DA SILVA' },
    naoAplicadas: 0,
  },
  {
    regra: 'regra 25: nome, data e uma mãe que o layout não aceita descaracterizam; o arquivo corrige nome e data e aponta a pessoa',
    pessoa: { mae: 'ANA DA SILVA' },
    rows: [
      { campo: 'Nome completo', conteudo: 'MARIA DA SILVA -- MARIA DA SILVA SOUZA' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15/03/2014' },
      { ...MAE, conteudo: 'ANA DA SILVA -- 1234' },
    ],
    correcao: ['formulario', 'formulario', 'receita'],
    linha: { nome: 'MARIA DA SILVA SOUZA', data: '15/03/2014' },
    // The mother's name, which the layout cannot take.
    naoAplicadas: 1,
    regra25: true,
  },
  {
    regra: 'regra 25: a mãe que só muda de grafia não conta; nome e data são corrigidos',
    pessoa: { mae: 'ANA DA CONCEICAO' },
    rows: [
      { campo: 'Nome completo', conteudo: 'MARIA DA SILVA -- MARIA DA SILVA SOUZA' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15/03/2014' },
      { ...MAE, conteudo: 'ANA DA CONCEICAO -- Ana da Conceição' },
    ],
    correcao: ['arquivo', 'arquivo', 'grafia'],
    linha: { nome: 'MARIA DA SILVA SOUZA', data: '15/03/2014', mae: 'ANA DA CONCEICAO' },
    naoAplicadas: 0,
  },
  {
    regra: 'regra 25: filiação 1 e 2 invertidas não contam (o txt tem o nome da Receita na filiação 2)',
    pessoa: { mae: 'JOSE DA SILVA', pai: 'ANA MARIA DA SILVA' },
    rows: [
      { campo: 'Nome completo', conteudo: 'MARIA DA SILVA -- MARIA DA SILVA SOUZA' },
      { campo: 'Data de nascimento', conteudo: '14/03/2014 -- 15/03/2014' },
      { ...MAE, conteudo: 'JOSE DA SILVA -- ANA MARIA DA SILVA' },
    ],
    // From the return alone the swap cannot be seen; nor does it count.
    correcao: ['arquivo', 'arquivo', 'educacenso'],
    linha: { nome: 'MARIA DA SILVA SOUZA', data: '15/03/2014', mae: 'JOSE DA SILVA', pai: 'ANA MARIA DA SILVA' },
    naoAplicadas: 0,
  },
  {
    regra: 'um valor da Receita que o layout não aceita: o cidadão atualiza a Receita',
    pessoa: {},
    rows: [{ campo: 'Data de nascimento', conteudo: '14/03/2014 -- 31/02/2014' }],
    correcao: ['receita'],
    linha: null,
    naoAplicadas: 1,
  },
  {
    regra: 'um campo que o arquivo corrigido não altera (sexo)',
    pessoa: {},
    rows: [{ campo: 'Sexo', conteudo: '1 -- 2' }],
    correcao: ['formulario'],
    linha: null,
    naoAplicadas: 1,
  },
  ...([false, true] as const).map((primeiro): Caso => ({
    regra: `CPF, regra 7: duas pessoas corrigidas para o mesmo CPF (${primeiro ? 'a outra' : 'esta'} primeiro no retorno): nenhuma o recebe`,
    pessoa: { cpf: '', inep: '123456789012' },
    outras: [record30('ALU2', { cpf: '', inep: '123456789013', nome: 'PEDRO LIMA' })],
    rows: [{ campo: 'Número do CPF', conteudo: ' -- 11144477735' }],
    segunda: { rows: [{ campo: 'Número do CPF', conteudo: ' -- 11144477735' }], primeiro },
    // From the return alone each person's CPF can be written.
    correcao: ['arquivo', 'arquivo'],
    linha: null,
    naoAplicadas: 2,
  })),
];

/** The return of one case: every row about the person at line 2 (code ALU1), and any about line 3 (ALU2). */
export function retornoDe(caso: Caso): object[] {
  const of = (linha: string, codigo: string) => (row: Row) => ({
    Registro: '30',
    Linha: linha,
    'Código na Escola': codigo,
    Campo: row.campo,
    Mensagem: row.mensagem ?? RF,
    Conteúdo: row.conteudo,
  });
  const rows = caso.rows.map(of('2', 'ALU1'));
  const segunda = (caso.segunda?.rows ?? []).map(of('3', 'ALU2'));
  return caso.segunda?.primeiro ? [...segunda, ...rows] : [...rows, ...segunda];
}

/** The census file of one case (lines: school, the person, the others, `99|`), LF. */
export function txtDe(caso: Caso): string {
  return [SCHOOL, record30('ALU1', caso.pessoa), ...(caso.outras ?? []), '99|'].join('\n') + '\n';
}

/** The census file the corrected file must be for one case. */
export function corrigidoDe(caso: Caso): string {
  const linha = caso.linha === null ? caso.pessoa : { ...caso.pessoa, ...caso.linha };
  return [SCHOOL, record30('ALU1', linha), ...(caso.outras ?? []), '99|'].join('\n') + '\n';
}
