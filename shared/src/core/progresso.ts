// A state's progress between census rounds (SPEC §10): each school's standing in a batch (the
// summary) and what changed from an earlier round (the comparison). Pure: the service feeds them
// from a batch's tasks and results, `censo comparar` from two combined outputs of `censo lote`, and
// both write the answer with the same functions here, so the two give the same bytes.
import { csvChunks } from './output/csv.js';
import { dadoOf, type Planilha } from './output/planilha.js';
import { xlsxBookChunks } from './output/xlsx.js';
import type { Chave } from './types.js';

export type ProgressoFormat = 'json' | 'csv' | 'xlsx';

/** The kinds a summary counts: each `chave`, and `outro` for a divergence without one. */
export const CHAVES_RESUMO = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai', 'outro'] as const;
export type ChaveResumo = (typeof CHAVES_RESUMO)[number];

export type ContagemResumo = { arquivos: number; falhas: number; divergencias: number } & Record<ChaveResumo, number>;
export type LinhaResumo = { referencia: string } & ContagemResumo;

export const RESUMO_COLUMNS = ['referencia', 'arquivos', 'falhas', 'divergencias', ...CHAVES_RESUMO] as const;

const zero = (): ContagemResumo => ({
  arquivos: 0,
  falhas: 0,
  divergencias: 0,
  cpf: 0,
  nome: 0,
  data_nascimento: 0,
  inep: 0,
  nome_mae: 0,
  nome_pai: 0,
  outro: 0,
});

/** One row per school (`referencia`), in the order its first file came, plus the total. */
export class Resumo {
  readonly #linhas = new Map<string, LinhaResumo>();
  readonly total: ContagemResumo = zero();

  #linha(referencia: string): LinhaResumo {
    let linha = this.#linhas.get(referencia);
    if (!linha) this.#linhas.set(referencia, (linha = { referencia, ...zero() }));
    return linha;
  }

  /** A file of the school; `falhou` when the service could not read it. */
  arquivo(referencia: string, falhou: boolean): void {
    const linha = this.#linha(referencia);
    linha.arquivos++;
    this.total.arquivos++;
    if (falhou) {
      linha.falhas++;
      this.total.falhas++;
    }
  }

  divergencia(referencia: string, chave: Chave | null): void {
    const linha = this.#linha(referencia);
    const kind: ChaveResumo = chave ?? 'outro';
    linha.divergencias++;
    linha[kind]++;
    this.total.divergencias++;
    this.total[kind]++;
  }

  get linhas(): LinhaResumo[] {
    return [...this.#linhas.values()];
  }
}

/** The total row of a summary's CSV and workbook. */
export const TOTAL = 'Total';

const RESUMO_PLANILHA: Planilha = {
  columns: ['Referência', 'Arquivos', 'Falhas', 'Divergências', ...CHAVES_RESUMO.map((chave) => dadoOf(chave))],
  cells: (item) => RESUMO_COLUMNS.map((column) => String((item as Record<string, unknown>)[column])),
};

/** The summary as an answer: `{"resumo": [...], "total": {...}}`, or rows then the total row. */
export async function* resumoChunks(resumo: Resumo, format: ProgressoFormat): AsyncGenerator<string | Buffer> {
  const linhas = resumo.linhas;
  const total = { referencia: TOTAL, ...resumo.total };
  if (format === 'json') {
    yield JSON.stringify({ resumo: linhas, total: resumo.total });
    return;
  }
  if (format === 'csv') {
    yield* csvChunks(
      RESUMO_COLUMNS,
      rowsOf([...linhas, total], (linha) => RESUMO_COLUMNS.map((column) => String(linha[column]))),
    );
    return;
  }
  yield* xlsxBookChunks([{ name: 'resumo', columns: RESUMO_PLANILHA.columns, rows: rowsOf([...linhas, total], RESUMO_PLANILHA.cells) }]);
}

// ------------------------------------------------------------------------------------ comparison

/** A divergence of one round as the comparison needs it. */
export interface DivergenciaRodada {
  readonly referencia: string;
  readonly codigo_na_escola: string;
  readonly campo: string;
  readonly enviado: string;
  readonly correto: string;
  readonly chave: Chave | null;
}

/** One round: the schools it holds (in its order) and their divergences. */
export interface Rodada {
  /** The schools with a file read in this round, whether or not it had divergences. */
  readonly referencias: Iterable<string>;
  readonly divergencias: AsyncIterable<DivergenciaRodada> | Iterable<DivergenciaRodada>;
}

export type Situacao = 'resolvida' | 'persistente' | 'nova';

export interface LinhaComparacao {
  readonly referencia: string;
  readonly codigo_na_escola: string;
  readonly chave: Chave | null;
  readonly campo: string;
  readonly situacao: Situacao;
  readonly enviado_anterior: string | null;
  readonly correto_anterior: string | null;
  readonly enviado_atual: string | null;
  readonly correto_atual: string | null;
}

export const COMPARACAO_COLUMNS = [
  'referencia',
  'codigo_na_escola',
  'chave',
  'campo',
  'situacao',
  'enviado_anterior',
  'correto_anterior',
  'enviado_atual',
  'correto_atual',
] as const;

export interface ContagemComparacao {
  resolvidas: number;
  persistentes: number;
  novas: number;
}

export interface Comparacao {
  readonly comparacao: LinhaComparacao[];
  readonly resumo: Array<{ referencia: string } & ContagemComparacao>;
  readonly total: ContagemComparacao;
  /** Schools in one round only: listed, not judged (nothing to compare them with). */
  readonly referencias_sem_par: Array<{ referencia: string; rodada: 'anterior' | 'atual' }>;
}

/** What identifies a divergence across rounds (SPEC §10): the school, the person, and the field (`campo` when no `chave`). */
const keyOf = (d: DivergenciaRodada): string => JSON.stringify([d.codigo_na_escola, d.chave ?? `campo:${d.campo}`]);

/** A round's divergences by school, then by key; a key seen twice keeps its later row (as the merge does, SPEC §3.2). */
async function byReferencia(rodada: Rodada): Promise<Map<string, Map<string, DivergenciaRodada>>> {
  const schools = new Map<string, Map<string, DivergenciaRodada>>();
  for (const referencia of rodada.referencias) if (!schools.has(referencia)) schools.set(referencia, new Map());
  for await (const d of rodada.divergencias) {
    let school = schools.get(d.referencia);
    if (!school) schools.set(d.referencia, (school = new Map()));
    const key = keyOf(d);
    school.delete(key);
    school.set(key, d);
  }
  return schools;
}

/**
 * Every divergence of either round judged: `resolvida` (earlier only), `persistente` (both; the
 * later one's values), `nova` (later only). Schools in the later round's order; within a school,
 * the earlier round's divergences in their order, then the new ones in theirs.
 */
export async function compararRodadas(anterior: Rodada, atual: Rodada): Promise<Comparacao> {
  const antes = await byReferencia(anterior);
  const depois = await byReferencia(atual);
  const comparacao: LinhaComparacao[] = [];
  const resumo: Comparacao['resumo'] = [];
  const total: ContagemComparacao = { resolvidas: 0, persistentes: 0, novas: 0 };
  const semPar: Comparacao['referencias_sem_par'] = [];
  for (const [referencia, agora] of depois) {
    const earlier = antes.get(referencia);
    if (!earlier) {
      semPar.push({ referencia, rodada: 'atual' });
      continue;
    }
    const counts: ContagemComparacao = { resolvidas: 0, persistentes: 0, novas: 0 };
    for (const [key, before] of earlier) {
      const after = agora.get(key);
      const situacao: Situacao = after ? 'persistente' : 'resolvida';
      comparacao.push({
        referencia,
        codigo_na_escola: before.codigo_na_escola,
        chave: before.chave,
        campo: (after ?? before).campo,
        situacao,
        enviado_anterior: before.enviado,
        correto_anterior: before.correto,
        enviado_atual: after?.enviado ?? null,
        correto_atual: after?.correto ?? null,
      });
      if (after) counts.persistentes++;
      else counts.resolvidas++;
    }
    for (const [key, after] of agora) {
      if (earlier.has(key)) continue;
      comparacao.push({
        referencia,
        codigo_na_escola: after.codigo_na_escola,
        chave: after.chave,
        campo: after.campo,
        situacao: 'nova',
        enviado_anterior: null,
        correto_anterior: null,
        enviado_atual: after.enviado,
        correto_atual: after.correto,
      });
      counts.novas++;
    }
    resumo.push({ referencia, ...counts });
    total.resolvidas += counts.resolvidas;
    total.persistentes += counts.persistentes;
    total.novas += counts.novas;
  }
  for (const referencia of antes.keys()) if (!depois.has(referencia)) semPar.push({ referencia, rodada: 'anterior' });
  return { comparacao, resumo, total, referencias_sem_par: semPar };
}

const SITUACAO: Readonly<Record<Situacao, string>> = { resolvida: 'Resolvida', persistente: 'Persistente', nova: 'Nova' };

const COMPARACAO_PLANILHA: Planilha = {
  columns: [
    'Referência',
    'Código na escola',
    'Dado',
    'Campo no retorno',
    'Situação',
    'Valor enviado (rodada anterior)',
    'Valor da Receita Federal (rodada anterior)',
    'Valor enviado (rodada atual)',
    'Valor da Receita Federal (rodada atual)',
  ],
  cells: (item) => {
    const linha = item as LinhaComparacao;
    return [
      linha.referencia,
      linha.codigo_na_escola,
      dadoOf(linha.chave),
      linha.campo,
      SITUACAO[linha.situacao],
      linha.enviado_anterior ?? '',
      linha.correto_anterior ?? '',
      linha.enviado_atual ?? '',
      linha.correto_atual ?? '',
    ];
  },
};

const CONTAGEM_PLANILHA: Planilha = {
  columns: ['Referência', 'Resolvidas', 'Persistentes', 'Novas'],
  cells: (item) => {
    const linha = item as { referencia: string } & ContagemComparacao;
    return [linha.referencia, String(linha.resolvidas), String(linha.persistentes), String(linha.novas)];
  },
};

/**
 * The comparison as an answer. json: the whole object; csv: the judged rows (the counts are the
 * json's and the workbook's); xlsx: the rows, then a sheet of counts per school with the total.
 */
export async function* comparacaoChunks(c: Comparacao, format: ProgressoFormat): AsyncGenerator<string | Buffer> {
  if (format === 'json') {
    // The rows in pieces (a state's comparison can hold hundreds of thousands), the rest at once.
    yield '{"comparacao":[';
    for (let i = 0; i < c.comparacao.length; i += 1_000) {
      yield (
        (i === 0 ? '' : ',') +
        c.comparacao
          .slice(i, i + 1_000)
          .map((linha) => JSON.stringify(linha))
          .join(',')
      );
    }
    yield `],"resumo":${JSON.stringify(c.resumo)},"total":${JSON.stringify(c.total)},"referencias_sem_par":${JSON.stringify(c.referencias_sem_par)}}`;
    return;
  }
  if (format === 'csv') {
    yield* csvChunks(
      COMPARACAO_COLUMNS,
      rowsOf(c.comparacao, (linha) => COMPARACAO_COLUMNS.map((column) => linha[column] ?? '')),
    );
    return;
  }
  yield* xlsxBookChunks([
    { name: 'comparacao', columns: COMPARACAO_PLANILHA.columns, rows: rowsOf(c.comparacao, COMPARACAO_PLANILHA.cells) },
    {
      name: 'resumo',
      columns: CONTAGEM_PLANILHA.columns,
      rows: rowsOf([...c.resumo, { referencia: TOTAL, ...c.total }], CONTAGEM_PLANILHA.cells),
    },
  ]);
}

async function* rowsOf<T>(items: readonly T[], cells: (item: T) => string[]): AsyncGenerator<string[]> {
  for (const item of items) yield cells(item);
}
