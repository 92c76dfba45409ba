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

/**
 * Whether the corrected census file writes the divergence's Receita value: what its `correcao`
 * says (SPEC §11). From the return alone: the file may still leave out a CPF another person of
 * the txt holds (field 5 rule 7), and writes a person rule 25 may refuse; the persons answer
 * (`arquivo_*`, `nao_aplicadas`) says what the file does with the txt.
 */
export function aplicadaNoCorrigido(divergencia: Pick<Divergencia, 'correcao'>): boolean {
  return divergencia.correcao === 'arquivo' || divergencia.correcao === 'educacenso';
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
    aplicadaNoCorrigido(d) ? SIM : NAO,
    CORRECAO_PALAVRAS[d.correcao as Correcao] ?? text(d.correcao),
    d.correcao ? orientacao(d) : '',
  ];
}

export const DIVERGENCIAS_PLANILHA: Planilha = { columns: DIVERGENCIA_WORDS, cells: divergenciaCells };

const PESSOA_WORDS: Readonly<Record<string, string>> = {
  codigo_na_escola: 'Código na escola',
  linha: 'Linha no txt',
  cpf: 'CPF',
  nome: 'Nome',
  data_nascimento: 'Data de nascimento',
  inep: 'INEP',
  nome_mae: 'Nome da mãe',
  arquivo_cpf: 'CPF no arquivo corrigido',
  arquivo_nome: 'Nome no arquivo corrigido',
  arquivo_data_nascimento: 'Data de nascimento no arquivo corrigido',
  arquivo_inep: 'INEP no arquivo corrigido',
  arquivo_nome_mae: 'Filiação 1 no arquivo corrigido',
  nao_aplicadas: 'Não aplicadas no arquivo corrigido (e por quê)',
  regra_25: 'O INEP pode recusar a pessoa (regra 25)',
};

export const PESSOAS_PLANILHA: Planilha = {
  columns: Object.values(PESSOA_WORDS),
  cells: (item) =>
    Object.keys(PESSOA_WORDS).map((field) => {
      const value = (item as Record<string, unknown>)[field];
      return typeof value === 'boolean' ? (value ? SIM : NAO) : text(value);
    }),
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
