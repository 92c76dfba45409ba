// Workbooks are for people, CSV and JSON for programs (SPEC §3.5, session 4): every XLSX the
// project writes keeps the columns of the JSON answer in their order, but heads them with the
// staff page's Portuguese words, writes `Sim`/`Não` and the words of `chave`, and for divergences
// adds whether the corrected census file applies each one (SPEC §3.4).
import { CORRECAO_PALAVRAS, orientacao } from '../reimportacao/correcao.js';
import type { Correcao, Divergencia } from '../types.js';

/** A table as a spreadsheet shows it: headers in words, and each item's cells. */
export interface Planilha {
  readonly columns: readonly string[];
  cells(item: object): string[];
}

/** The words of `chave` (SPEC §2), as the page shows them. */
export const DADOS: Readonly<Record<string, string>> = {
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
  nome_mae: 'Nome da mãe',
  nome_pai: 'Nome do pai',
  outro: 'Outro campo',
};

export const SIM = 'Sim';
export const NAO = 'Não';
export const NAO_CORRIGIDO = 'não corrigido automaticamente';

/**
 * Whether the corrected census file applies the divergence: what its `correcao` says (SPEC §11).
 * The file may still leave out a CPF another person of the txt holds (field 5 rule 7), which only
 * the txt shows.
 */
export function aplicadaNoCorrigido(divergencia: Pick<Divergencia, 'correcao'>): boolean {
  return divergencia.correcao === 'arquivo';
}

const text = (value: unknown): string => (value === null || value === undefined ? '' : String(value));
export const dadoOf = (chave: unknown): string => DADOS[chave === null || chave === undefined ? 'outro' : String(chave)] ?? text(chave);

const DIVERGENCIA_WORDS = [
  'Código na escola',
  'Linha no txt',
  'Campo no retorno',
  'Valor enviado',
  'Valor da Receita Federal',
  'Filiação',
  'Dado',
  'No arquivo corrigido',
  'Como corrigir',
  'O que fazer',
];

function divergenciaCells(item: object): string[] {
  const d = item as Divergencia;
  return [
    text(d.codigo_na_escola),
    text(d.linha),
    text(d.campo),
    text(d.enviado),
    text(d.correto),
    d.is_filiacao ? SIM : NAO,
    dadoOf(d.chave),
    aplicadaNoCorrigido(d) ? SIM : NAO_CORRIGIDO,
    CORRECAO_PALAVRAS[d.correcao as Correcao] ?? text(d.correcao),
    d.correcao ? orientacao(d) : '',
  ];
}

export const DIVERGENCIAS_PLANILHA: Planilha = { columns: DIVERGENCIA_WORDS, cells: divergenciaCells };

const PESSOA_FIELDS = ['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'];

export const PESSOAS_PLANILHA: Planilha = {
  columns: ['Código na escola', 'Linha no txt', 'CPF', 'Nome', 'Data de nascimento', 'INEP', 'Nome da mãe'],
  cells: (item) => PESSOA_FIELDS.map((field) => text((item as Record<string, unknown>)[field])),
};

/** Columns of its own first (`referencia` → `Referência`...), then another table's. */
export function prefixed(words: Readonly<Record<string, string>>, rest: Planilha | null): Planilha {
  const fields = Object.keys(words);
  return {
    columns: [...Object.values(words), ...(rest?.columns ?? [])],
    cells: (item) => [...fields.map((field) => text((item as Record<string, unknown>)[field])), ...(rest?.cells(item) ?? [])],
  };
}

/** A batch's divergences: the school's reference and the file's name, then a divergence. */
export const LOTE_DIVERGENCIAS_PLANILHA = prefixed({ referencia: 'Referência', arquivo: 'Arquivo' }, DIVERGENCIAS_PLANILHA);
/** `censo lote`'s combined result: the file's path in the folder, then a divergence. */
export const LOTE_ARQUIVO_PLANILHA = prefixed({ arquivo: 'Arquivo' }, DIVERGENCIAS_PLANILHA);
/**
 * A batch's failed files (SPEC §7.3). The workbook is for people: the school, the file and the
 * service's words for what went wrong; the HTTP status is for programs (the CSV and JSON keep it).
 */
export const FALHAS_PLANILHA = prefixed({ referencia: 'Referência', arquivo: 'Arquivo', erro: 'Erro' }, null);

export async function* planilhaRows(items: AsyncIterable<object> | Iterable<object>, planilha: Planilha): AsyncGenerator<string[]> {
  for await (const item of items) yield planilha.cells(item);
}
