// A state's progress between census rounds (SPEC §10): each school's standing in a batch (the
// summary) and what changed from an earlier round (the comparison). Pure: the service feeds them
// from a batch's tasks and results, `censo comparar` from two combined outputs of `censo lote`, and
// both write the answer with the same functions here, so the two give the same bytes.
import { csvChunks } from './output/csv.js';
import { dadoOf, type Planilha } from './output/planilha.js';
import { xlsxBookChunks, type XlsxCell } from './output/xlsx.js';
import { CORRECAO_PALAVRAS, CORRECOES } from './reimportacao/correcao.js';
import type { Chave, Correcao } from './types.js';

export type ProgressoFormat = 'json' | 'csv' | 'xlsx';

/** The kinds a summary counts: each `chave`, and `outro` for a divergence without one. */
export const CHAVES_RESUMO = ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai', 'outro'] as const;
export type ChaveResumo = (typeof CHAVES_RESUMO)[number];

/** How a summary counts each way a divergence gets fixed (SPEC §11), as its columns name it. */
export const CORRECOES_RESUMO = [
  'correcao_arquivo',
  'correcao_educacenso',
  'correcao_formulario',
  'correcao_receita',
  'correcao_grafia',
] as const;
export type CorrecaoResumo = (typeof CORRECOES_RESUMO)[number];

export type ContagemResumo = { arquivos: number; falhas: number; divergencias: number } & Record<ChaveResumo, number> &
  Record<CorrecaoResumo, number>;
export type LinhaResumo = { referencia: string } & ContagemResumo;

export const RESUMO_COLUMNS = ['referencia', 'arquivos', 'falhas', 'divergencias', ...CHAVES_RESUMO, ...CORRECOES_RESUMO] as const;

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
  correcao_arquivo: 0,
  correcao_educacenso: 0,
  correcao_formulario: 0,
  correcao_receita: 0,
  correcao_grafia: 0,
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

  /** A divergence of the school; `correcao` absent in a result from before it (SPEC §11), which then counts in no way of fixing. */
  divergencia(referencia: string, chave: Chave | null, correcao?: Correcao | null): void {
    const linha = this.#linha(referencia);
    const kind: ChaveResumo = chave ?? 'outro';
    linha.divergencias++;
    linha[kind]++;
    this.total.divergencias++;
    this.total[kind]++;
    if (correcao) {
      linha[`correcao_${correcao}`]++;
      this.total[`correcao_${correcao}`]++;
    }
  }

  get linhas(): LinhaResumo[] {
    return [...this.#linhas.values()];
  }
}

/** The total row of a summary's CSV and workbook. */
export const TOTAL = 'Total';

const RESUMO_WORDS = [
  'Referência',
  'Arquivos',
  'Falhas',
  'Divergências',
  ...CHAVES_RESUMO.map((chave) => dadoOf(chave)),
  ...CORRECOES.map((correcao) => `Como corrigir: ${CORRECAO_PALAVRAS[correcao]}`),
];

/** A summary row in the workbook: the school as text, its counts as numbers (issue 50: `=SOMA()` works on them). */
const resumoCells = (linha: LinhaResumo): XlsxCell[] => RESUMO_COLUMNS.map((column) => linha[column]);

/** The summary as an answer: `{"resumo": [...], "total": {...}}`, or rows then the total row. */
export async function* resumoChunks(resumo: Resumo, format: ProgressoFormat): AsyncGenerator<string | Buffer> {
  const linhas = resumo.linhas;
  const total = { referencia: TOTAL, ...resumo.total };
  if (format === 'json') {
    // A JSON text ends its line (issue 50): on a terminal, what follows starts on a line of its own.
    yield `${JSON.stringify({ resumo: linhas, total: resumo.total })}\n`;
    return;
  }
  if (format === 'csv') {
    yield* csvChunks(
      RESUMO_COLUMNS,
      rowsOf([...linhas, total], (linha) => RESUMO_COLUMNS.map((column) => String(linha[column]))),
    );
    return;
  }
  yield* xlsxBookChunks([{ name: 'resumo', columns: RESUMO_WORDS, rows: rowsOf([...linhas, total], resumoCells) }]);
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
  /** How it gets fixed (SPEC §11); absent in a result written before it. */
  readonly correcao?: Correcao | null;
}

/** A file of a round that could not be read, and the failure's words (the service's `erro`). */
export interface FalhaRodada {
  readonly referencia: string;
  readonly erro: string;
}

/** One round: the schools it holds (in its order), the files that failed, and their divergences. */
export interface Rodada {
  /** The schools with a file read in this round, whether or not it had divergences. */
  readonly referencias: Iterable<string>;
  /**
   * Files of this round that failed (issue 50): a school whose file failed is said to have failed,
   * not to be missing. A school also read in this round is not a failure of it.
   */
  readonly falhas?: Iterable<FalhaRodada>;
  readonly divergencias: AsyncIterable<DivergenciaRodada> | Iterable<DivergenciaRodada>;
  /**
   * The INEP code of each school read whose file carried one (issue 54), as `[referencia, codigo]`
   * (a Map will do): the same school in every round whatever its file is called. Absent: none did.
   */
  readonly escolas?: Iterable<readonly [string, string]>;
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
  /** How it gets fixed (SPEC §11, issue 56): the later round's, else the earlier one's; null in a result from before it. */
  readonly correcao: Correcao | null;
}

/** A judged row's way of fixing (issue 56): what the later round says, else what the earlier one said. */
export const correcaoDaLinha = (after: DivergenciaRodada | undefined, before: DivergenciaRodada | undefined): Correcao | null =>
  after?.correcao ?? before?.correcao ?? null;

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
  'correcao',
] as const;

export interface ContagemComparacao {
  resolvidas: number;
  persistentes: number;
  novas: number;
  /**
   * The later round's divergences (persistent and new) that still ask someone to act: all but
   * `grafia` (issue 56). A row without `correcao` (a result from before it) is pending: unknown.
   */
  pendentes: number;
  /** The later round's divergences that are `grafia`: how the census writes a name, nothing to do. */
  grafia: number;
}

/** Counts of nothing yet. */
export const contagemVazia = (): ContagemComparacao => ({ resolvidas: 0, persistentes: 0, novas: 0, pendentes: 0, grafia: 0 });

/** Counts a divergence of the later round (persistent or new) as pending or as `grafia`. */
export function contarAtual(counts: ContagemComparacao, correcao: Correcao | null | undefined): void {
  if (correcao === 'grafia') counts.grafia++;
  else counts.pendentes++;
}

/** Adds a school's counts to the total. */
export function somarContagem(total: ContagemComparacao, counts: ContagemComparacao): void {
  total.resolvidas += counts.resolvidas;
  total.persistentes += counts.persistentes;
  total.novas += counts.novas;
  total.pendentes += counts.pendentes;
  total.grafia += counts.grafia;
}

/** Why a school was not compared: no file of it in the other round, or that file failed. */
export type MotivoSemPar = 'sem_arquivo' | 'falhou';

export interface SemPar {
  /** The school as the round that has it read names it. */
  readonly referencia: string;
  /** The round in which it was read. */
  readonly rodada: 'anterior' | 'atual';
  readonly motivo: MotivoSemPar;
  /** With `falhou`: the other round's failure, in the service's words; else null. */
  readonly erro: string | null;
}

/** A school's counts; `referencia_anterior` when the earlier round named it otherwise (paired by its folder). */
export type ResumoComparacao = { referencia: string; referencia_anterior?: string } & ContagemComparacao;

export interface Comparacao {
  readonly comparacao: LinhaComparacao[];
  readonly resumo: ResumoComparacao[];
  readonly total: ContagemComparacao;
  /** Schools in one round only, and why: listed, not judged (nothing to compare them with). */
  readonly referencias_sem_par: SemPar[];
}

/** What identifies a divergence across rounds (SPEC §10): the school, the person, and the field (`campo` when no `chave`). */
const keyOf = (d: DivergenciaRodada): string => JSON.stringify([d.codigo_na_escola, d.chave ?? `campo:${d.campo}`]);

/** A round's schools: the divergences of each read one by key, and the failure of each that only failed. */
interface Escolas {
  readonly lidas: Map<string, Map<string, DivergenciaRodada>>;
  readonly falhas: Map<string, string>;
  readonly codigos: CodigosInep;
}

/** A round's INEP codes (issue 54): each read school's, and the school each code names. */
export interface CodigosInep {
  /** A school read whose file carried a code (one only: a name given two codes has none). */
  readonly deReferencia: ReadonlyMap<string, string>;
  /** A code that names exactly one school of the round: only such a code pairs schools. */
  readonly referenciaDe: ReadonlyMap<string, string>;
}

/**
 * The codes of a round's schools read: a `referencia` said with two codes keeps none, and a code
 * said for two `referencia`s pairs neither (which of them is the school is not known; both
 * still refuse a name pairing with another code's school).
 */
export function codigosInep(escolas: Iterable<readonly [string, string]> | undefined, lidas: (referencia: string) => boolean): CodigosInep {
  const deReferencia = new Map<string, string | null>();
  for (const [referencia, codigo] of escolas ?? []) {
    if (!lidas(referencia)) continue;
    const known = deReferencia.get(referencia);
    deReferencia.set(referencia, known === undefined || known === codigo ? codigo : null);
  }
  const codigos = new Map<string, string>();
  for (const [referencia, codigo] of deReferencia) if (codigo !== null) codigos.set(referencia, codigo);
  const referenciaDe = new Map<string, string | null>();
  for (const [referencia, codigo] of codigos) referenciaDe.set(codigo, referenciaDe.has(codigo) ? null : referencia);
  const unicos = new Map<string, string>();
  for (const [codigo, referencia] of referenciaDe) if (referencia !== null) unicos.set(codigo, referencia);
  return { deReferencia: codigos, referenciaDe: unicos };
}

/** Two files that both carry a code and not the same one are two schools, whatever their names. */
export const codigosDiferem = (a: string | undefined, b: string | undefined): boolean => a !== undefined && b !== undefined && a !== b;

/** A round's divergences by school, then by key; a key seen twice keeps its later row (as the merge does, SPEC §3.2). */
async function byReferencia(rodada: Rodada): Promise<Escolas> {
  const lidas = new Map<string, Map<string, DivergenciaRodada>>();
  for (const referencia of rodada.referencias) if (!lidas.has(referencia)) lidas.set(referencia, new Map());
  for await (const d of rodada.divergencias) {
    let school = lidas.get(d.referencia);
    if (!school) lidas.set(d.referencia, (school = new Map()));
    const key = keyOf(d);
    school.delete(key);
    school.set(key, d);
  }
  const falhas = new Map<string, string>();
  for (const { referencia, erro } of rodada.falhas ?? [])
    if (!lidas.has(referencia) && !falhas.has(referencia)) falhas.set(referencia, erro);
  return { lidas, falhas, codigos: codigosInep(rodada.escolas, (referencia) => lidas.has(referencia)) };
}

/**
 * The folder part of a school's name (`escola-a/retorno.json` → `escola-a`), or null when it has
 * none: `censo lote` (and `lote --servidor`, SPEC §7.3) name a school by its file's path, and a
 * school's folder keeps its name between rounds while INEP's file inside it often does not.
 */
export function pastaOf(referencia: string): string | null {
  const slash = referencia.lastIndexOf('/');
  return slash > 0 ? referencia.slice(0, slash) : null;
}

/** Each folder that holds exactly one school of the round (read or failed), to that school. */
function soleByFolder(escolas: Escolas): Map<string, string> {
  const count = new Map<string, number>();
  const sole = new Map<string, string>();
  for (const referencia of [...escolas.lidas.keys(), ...escolas.falhas.keys()]) {
    const pasta = pastaOf(referencia);
    if (pasta === null) continue;
    count.set(pasta, (count.get(pasta) ?? 0) + 1);
    sole.set(pasta, referencia);
  }
  for (const [pasta, n] of count) if (n > 1) sole.delete(pasta);
  return sole;
}

/**
 * Which school of the earlier round each school of the later one is (SPEC §10, decided in issues
 * 50 and 54): the same INEP code, when both files carry one (files are renamed between rounds,
 * and pre-named by position they even trade names); else the same `referencia`; else, when
 * neither round has that `referencia`, the one school of the same folder, when the folder holds
 * exactly one school in each round (a renamed file). Each earlier school pairs once, and two files
 * whose codes differ never pair by a name.
 */
function pairs(antes: Escolas, depois: Escolas): Map<string, string> {
  const has = (escolas: Escolas, referencia: string) => escolas.lidas.has(referencia) || escolas.falhas.has(referencia);
  const paired = new Map<string, string>();
  const taken = new Set<string>();
  const pair = (later: string, earlier: string) => {
    paired.set(later, earlier);
    taken.add(earlier);
  };
  for (const [codigo, referencia] of depois.codigos.referenciaDe) {
    const earlier = antes.codigos.referenciaDe.get(codigo);
    if (earlier !== undefined) pair(referencia, earlier);
  }
  const free = (later: string, earlier: string) =>
    !paired.has(later) &&
    !taken.has(earlier) &&
    !codigosDiferem(depois.codigos.deReferencia.get(later), antes.codigos.deReferencia.get(earlier));
  for (const referencia of [...depois.lidas.keys(), ...depois.falhas.keys()])
    if (has(antes, referencia) && free(referencia, referencia)) pair(referencia, referencia);
  const earlierByFolder = soleByFolder(antes);
  for (const [pasta, referencia] of soleByFolder(depois)) {
    const earlier = earlierByFolder.get(pasta);
    if (earlier === undefined || !free(referencia, earlier) || has(depois, earlier) || has(antes, referencia)) continue;
    pair(referencia, earlier);
  }
  return paired;
}

/**
 * Every divergence of either round judged: `resolvida` (earlier only), `persistente` (both; the
 * later one's values), `nova` (later only). Schools in the later round's order; within a school,
 * the earlier round's divergences in their order, then the new ones in theirs. A school read in
 * one round only is listed in `referencias_sem_par`, with why.
 */
export async function compararRodadas(anterior: Rodada, atual: Rodada): Promise<Comparacao> {
  const antes = await byReferencia(anterior);
  const depois = await byReferencia(atual);
  const paired = pairs(antes, depois);
  const earlierPaired = new Set(paired.values());
  const comparacao: LinhaComparacao[] = [];
  const resumo: ResumoComparacao[] = [];
  const total = contagemVazia();
  const semPar: SemPar[] = [];
  for (const [referencia, agora] of depois.lidas) {
    const earlierName = paired.get(referencia);
    const earlier = earlierName === undefined ? undefined : antes.lidas.get(earlierName);
    if (!earlier) {
      const erro = earlierName === undefined ? undefined : antes.falhas.get(earlierName);
      semPar.push({ referencia, rodada: 'atual', motivo: erro === undefined ? 'sem_arquivo' : 'falhou', erro: erro ?? null });
      continue;
    }
    const counts = contagemVazia();
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
        correcao: correcaoDaLinha(after, before),
      });
      if (after) {
        counts.persistentes++;
        contarAtual(counts, after.correcao);
      } else counts.resolvidas++;
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
        correcao: correcaoDaLinha(after, undefined),
      });
      counts.novas++;
      contarAtual(counts, after.correcao);
    }
    resumo.push(earlierName === referencia ? { referencia, ...counts } : { referencia, referencia_anterior: earlierName!, ...counts });
    somarContagem(total, counts);
  }
  const laterOf = new Map([...paired].map(([later, earlier]) => [earlier, later]));
  for (const referencia of antes.lidas.keys()) {
    if (earlierPaired.has(referencia) && depois.lidas.has(laterOf.get(referencia)!)) continue;
    const later = laterOf.get(referencia);
    const erro = later === undefined ? undefined : depois.falhas.get(later);
    semPar.push({ referencia, rodada: 'anterior', motivo: erro === undefined ? 'sem_arquivo' : 'falhou', erro: erro ?? null });
  }
  return { comparacao, resumo, total, referencias_sem_par: semPar };
}

/** Why a school was not compared, in words (the terminal, the workbook). */
export function semParText(item: SemPar): string {
  const outra = item.rodada === 'anterior' ? 'atual' : 'anterior';
  return item.motivo === 'falhou'
    ? `o arquivo da rodada ${outra} falhou: ${item.erro ?? ''}`.replace(/: $/, '')
    : `sem arquivo na rodada ${outra}`;
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
    'Como corrigir',
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
      linha.correcao ? CORRECAO_PALAVRAS[linha.correcao] : '',
    ];
  },
};

/** A school's counts in the workbook: the names as text, the counts as numbers (issue 50). */
const CONTAGEM_WORDS = ['Referência', 'Resolvidas', 'Persistentes', 'Novas', 'Pendentes', 'Só grafia', 'Referência na rodada anterior'];
const contagemCells = (linha: ResumoComparacao): XlsxCell[] => [
  linha.referencia,
  linha.resolvidas,
  linha.persistentes,
  linha.novas,
  linha.pendentes,
  linha.grafia,
  linha.referencia_anterior ?? '',
];

const RODADA_WORDS: Readonly<Record<SemPar['rodada'], string>> = { anterior: 'Só na rodada anterior', atual: 'Só na rodada atual' };
const SEM_PAR_WORDS = ['Referência', 'Rodada', 'Motivo'];
const semParCells = (item: SemPar): XlsxCell[] => [item.referencia, RODADA_WORDS[item.rodada], semParText(item)];

/**
 * The comparison as an answer. json: the whole object; csv: the judged rows (the counts are the
 * json's and the workbook's); xlsx: the rows, a sheet of counts per school with the total, and a
 * sheet naming the schools not compared and why (`sem par`, issue 50).
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
    // A JSON text ends its line (issue 50): on a terminal, the summary after it starts on a line of its own.
    yield `],"resumo":${JSON.stringify(c.resumo)},"total":${JSON.stringify(c.total)},"referencias_sem_par":${JSON.stringify(c.referencias_sem_par)}}\n`;
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
    { name: 'resumo', columns: CONTAGEM_WORDS, rows: rowsOf([...c.resumo, { referencia: TOTAL, ...c.total }], contagemCells) },
    { name: 'sem par', columns: SEM_PAR_WORDS, rows: rowsOf(c.referencias_sem_par, semParCells) },
  ]);
}

async function* rowsOf<T, C>(items: readonly T[], cells: (item: T) => C[]): AsyncGenerator<C[]> {
  for (const item of items) yield cells(item);
}
