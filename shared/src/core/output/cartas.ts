// A letter per school (issue 56): what each school of a batch must do about its divergences and
// where, as a file the secretariat sends it — a workbook (`escolas`, `pessoas`) or one printable
// HTML page with a section per school and, for the persons whose CPF record must be mended at the
// Receita Federal, a notice the school hands the family. Pure: the service feeds it from a batch's
// results, `censo cartas` from `censo lote`'s combined output, and both write with the functions
// here, so the two give the same letters.
import { dadoOf } from './planilha.js';
import { xlsxBookChunks, type XlsxCell } from './xlsx.js';
import { CORRECAO_PALAVRAS, orientacao } from '../reimportacao/correcao.js';
import type { Chave, Correcao } from '../types.js';

export type CartasFormat = 'xlsx' | 'html';
export const CARTAS_FORMATS: readonly CartasFormat[] = ['xlsx', 'html'];

/** A divergence of the batch as a letter needs it: the school (`referencia`) and the divergence's fields. */
export interface DivergenciaCarta {
  readonly referencia: string;
  readonly codigo_na_escola: string;
  readonly linha: string;
  readonly campo: string;
  readonly enviado: string;
  readonly correto: string;
  readonly chave: Chave | null;
  /** How it gets fixed (SPEC §11); absent in a result written before it. */
  readonly correcao?: Correcao | null;
}

/** One school's letter: its counts per way of fixing, and the divergences it must act on (not `grafia`). */
export interface CartaEscola {
  readonly referencia: string;
  /** Per `correcao`, and `sem_correcao` for a divergence of a result from before it. */
  readonly contagem: Record<Correcao | 'sem_correcao', number>;
  readonly pessoas: DivergenciaCarta[];
}

const zero = (): CartaEscola['contagem'] => ({ arquivo: 0, educacenso: 0, formulario: 0, receita: 0, grafia: 0, sem_correcao: 0 });

/**
 * The letters of a batch, one per school in the order its first file came. A school whose file was
 * read without divergences gets a letter too (it has nothing to do, and is told so).
 *
 * Holds the divergences that need action, by school: a school's may come from several files
 * apart in the batch, and its letter lists them together.
 */
export class Cartas {
  readonly #escolas = new Map<string, CartaEscola>();

  #escola(referencia: string): CartaEscola {
    let escola = this.#escolas.get(referencia);
    if (!escola) this.#escolas.set(referencia, (escola = { referencia, contagem: zero(), pessoas: [] }));
    return escola;
  }

  /** A school whose file was read. */
  escola(referencia: string): void {
    this.#escola(referencia);
  }

  divergencia(d: DivergenciaCarta): void {
    const escola = this.#escola(d.referencia);
    escola.contagem[d.correcao ?? 'sem_correcao']++;
    if (d.correcao !== 'grafia') escola.pessoas.push(d);
  }

  get escolas(): CartaEscola[] {
    return [...this.#escolas.values()];
  }
}

/** Each count's words in the sentence, in the order a school acts on them. */
const FRASE: ReadonlyArray<[Exclude<Correcao, 'grafia'> | 'sem_correcao', string]> = [
  ['formulario', 'no formulário do Educacenso'],
  ['receita', 'para o cidadão na Receita Federal'],
  ['arquivo', 'pelo arquivo corrigido (corrija também no sistema da escola)'],
  ['educacenso', 'já no Educacenso (corrija só no sistema da escola)'],
  ['sem_correcao', 'sem indicação de como corrigir (resultado de uma versão anterior)'],
];

/** What a school must do, in a sentence: "3 no formulário do Educacenso, 2 para o cidadão na Receita Federal; 4 só de grafia, nada a fazer". */
export function fraseDaCarta(contagem: CartaEscola['contagem']): string {
  const acoes = FRASE.filter(([key]) => contagem[key] > 0).map(([key, words]) => `${contagem[key]} ${words}`);
  const grafia = contagem.grafia > 0 ? `${contagem.grafia} só de grafia, nada a fazer` : '';
  if (acoes.length === 0) return grafia === '' ? 'Nenhuma divergência: nada a fazer.' : `${grafia[0]!.toUpperCase()}${grafia.slice(1)}.`;
  return `${acoes.join(', ')}${grafia === '' ? '' : `; ${grafia}`}.`;
}

/** How many divergences the school has, every kind. */
const totalOf = (contagem: CartaEscola['contagem']): number => Object.values(contagem).reduce((a, b) => a + b, 0);

const comoCorrigir = (d: DivergenciaCarta): string => (d.correcao ? CORRECAO_PALAVRAS[d.correcao] : '');
const oQueFazer = (d: DivergenciaCarta): string => (d.correcao ? orientacao({ ...d, correcao: d.correcao }) : '');

/**
 * Whether the family must mend the CPF's record at the Receita Federal: a `receita` divergence
 * other than the father's name, which the Receita does not keep (that one the school confirms
 * with the family, and fixes on the form: `orientacao`).
 */
export const precisaDaReceita = (d: DivergenciaCarta): boolean => d.correcao === 'receita' && d.chave !== 'nome_pai';

// ------------------------------------------------------------------------------------ workbook

const CONTAGEM_COLUMNS = ['formulario', 'receita', 'arquivo', 'educacenso', 'grafia'] as const satisfies readonly Correcao[];

export const CARTAS_ESCOLAS_WORDS = [
  'Referência (escola)',
  'Divergências',
  ...CONTAGEM_COLUMNS.map((correcao) => `Como corrigir: ${CORRECAO_PALAVRAS[correcao]}`),
  'Sem indicação de como corrigir',
  'O que a escola deve fazer',
];

export const CARTAS_PESSOAS_WORDS = [
  'Referência (escola)',
  'Código na escola',
  'Linha no txt',
  'Dado',
  'Campo no retorno',
  'Valor enviado',
  'Valor da Receita Federal',
  'Como corrigir',
  'O que fazer',
];

/** A school's row: its name and sentence as text, its counts as numbers (`=SOMA()` works on them). */
const escolaCells = (escola: CartaEscola): XlsxCell[] => [
  escola.referencia,
  totalOf(escola.contagem),
  ...CONTAGEM_COLUMNS.map((correcao) => escola.contagem[correcao]),
  escola.contagem.sem_correcao,
  fraseDaCarta(escola.contagem),
];

const pessoaCells = (referencia: string, d: DivergenciaCarta): XlsxCell[] => [
  referencia,
  d.codigo_na_escola,
  d.linha,
  dadoOf(d.chave),
  d.campo,
  d.enviado,
  d.correto,
  comoCorrigir(d),
  oQueFazer(d),
];

async function* rowsOf<T>(items: Iterable<T>, cells: (item: T) => XlsxCell[]): AsyncGenerator<XlsxCell[]> {
  for (const item of items) yield cells(item);
}

function* pessoasOf(escolas: readonly CartaEscola[]): Generator<[string, DivergenciaCarta]> {
  for (const escola of escolas) for (const d of escola.pessoas) yield [escola.referencia, d];
}

// ------------------------------------------------------------------------------------ page

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Every value comes from an uploaded file: escaped wherever it is written. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/**
 * The page's only style (a fixed table layout with each column's share of the paper: a long value
 * wraps inside its column instead of pushing the table off the page), inline (the page is a file and loads nothing): the service's
 * Content-Security-Policy names it by its hash (`cartasStyleHash`).
 */
export const CARTAS_STYLE = `
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #111; }
.carta { margin-bottom: 3rem; }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
.frase { font-size: 1.1rem; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; table-layout: fixed; }
th:nth-child(1) { width: 9%; } th:nth-child(2) { width: 6%; } th:nth-child(3) { width: 10%; } th:nth-child(4) { width: 14%; }
th:nth-child(5) { width: 15%; } th:nth-child(6) { width: 12%; } th:nth-child(7) { width: 34%; }
th, td { border: 1px solid #888; padding: .3rem .4rem; text-align: left; vertical-align: top; overflow-wrap: break-word; }
th { background: #eee; }
.aviso { border: 2px dashed #444; padding: .8rem 1rem; margin-top: 1.2rem; break-inside: avoid; page-break-inside: avoid; }
.aviso h2 { font-size: 1.1rem; margin: 0 0 .4rem; }
.recorte { font-size: .8rem; color: #444; }
@media print {
  body { margin: 0; }
  .carta { break-after: page; page-break-after: always; margin: 0; }
  .carta:last-of-type { break-after: auto; page-break-after: auto; }
}
`;

const PESSOA_HEADERS = [
  'Código na escola',
  'Linha no txt',
  'Dado',
  'Valor enviado',
  'Valor da Receita Federal',
  'Como corrigir',
  'O que fazer',
];

function tabelaDePessoas(pessoas: readonly DivergenciaCarta[]): string {
  if (pessoas.length === 0) return '';
  const head = `<tr>${PESSOA_HEADERS.map((h) => `<th scope="col">${escapeHtml(h)}</th>`).join('')}</tr>`;
  const rows = pessoas.map(
    (d) =>
      `<tr>${[d.codigo_na_escola, d.linha, dadoOf(d.chave), d.enviado, d.correto, comoCorrigir(d), oQueFazer(d)]
        .map((cell) => `<td>${escapeHtml(cell)}</td>`)
        .join('')}</tr>`,
  );
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${rows.join('\n')}\n</tbody>\n</table>\n`;
}

/** The notice for one person's family: what to update at the Receita Federal, what to bring, and why. */
function avisoFamilia(referencia: string, codigo: string, divergencias: readonly DivergenciaCarta[]): string {
  const dados = divergencias.map((d) => `<li>${escapeHtml(dadoOf(d.chave))} (como a escola registrou: ${escapeHtml(d.enviado)})</li>`);
  return (
    '<div class="aviso">\n' +
    '<p class="recorte">✂ Recorte e entregue à família</p>\n' +
    '<h2>Aviso à família: atualize o cadastro do CPF na Receita Federal</h2>\n' +
    `<p>Escola: ${escapeHtml(referencia)}. Estudante (código na escola): ${escapeHtml(codigo)}.</p>\n` +
    `<p>Dados a atualizar no cadastro do CPF:</p>\n<ul>\n${dados.join('\n')}\n</ul>\n` +
    '<p><strong>O que fazer:</strong> atualize o cadastro do CPF no atendimento da Receita Federal ou pelo site gov.br. ' +
    'Leve um documento de identidade e a certidão de nascimento ou de casamento.</p>\n' +
    '<p><strong>Por quê:</strong> o Censo Escolar compara os dados do estudante com o cadastro do CPF. ' +
    'Uma diferença pode impedir que os dados da escola sejam aceitos.</p>\n' +
    '</div>\n'
  );
}

/** The notices of a school: one per person with a divergence only the Receita Federal can mend. */
function avisos(escola: CartaEscola): string {
  const porPessoa = new Map<string, DivergenciaCarta[]>();
  for (const d of escola.pessoas) {
    if (!precisaDaReceita(d)) continue;
    // The person as its return names it: its line, else its code (SPEC §11).
    const key = JSON.stringify([d.codigo_na_escola, d.linha]);
    porPessoa.set(key, [...(porPessoa.get(key) ?? []), d]);
  }
  return [...porPessoa.values()].map((ds) => avisoFamilia(escola.referencia, ds[0]!.codigo_na_escola, ds)).join('');
}

function secao(escola: CartaEscola): string {
  return (
    '<section class="carta">\n' +
    `<h1>Escola: ${escapeHtml(escola.referencia)}</h1>\n` +
    `<p>Divergências entre os dados enviados ao Censo Escolar e o cadastro do CPF na Receita Federal: ${totalOf(escola.contagem)}.</p>\n` +
    `<p class="frase">${escapeHtml(fraseDaCarta(escola.contagem))}</p>\n` +
    tabelaDePessoas(escola.pessoas) +
    avisos(escola) +
    '</section>\n'
  );
}

function* htmlChunks(escolas: readonly CartaEscola[]): Generator<string> {
  yield (
    '<!doctype html>\n<html lang="pt-BR">\n<head>\n<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    `<title>Cartas às escolas: o que corrigir no Censo Escolar</title>\n<style>${CARTAS_STYLE}</style>\n</head>\n<body>\n`
  );
  if (escolas.length === 0) yield '<p>Nenhuma escola neste resultado.</p>\n';
  for (const escola of escolas) yield secao(escola);
  yield '</body>\n</html>\n';
}

/** The letters as a file: the workbook (`escolas`, `pessoas`) or the printable page. */
export async function* cartasChunks(cartas: Cartas, format: CartasFormat): AsyncGenerator<string | Buffer> {
  const escolas = cartas.escolas;
  if (format === 'html') {
    yield* htmlChunks(escolas);
    return;
  }
  yield* xlsxBookChunks([
    { name: 'escolas', columns: CARTAS_ESCOLAS_WORDS, rows: rowsOf(escolas, escolaCells) },
    { name: 'pessoas', columns: CARTAS_PESSOAS_WORDS, rows: rowsOf(pessoasOf(escolas), ([referencia, d]) => pessoaCells(referencia, d)) },
  ]);
}
