// What a batch (`censo lote`, local or on a server) did, said at its end on stderr: how many
// returns it found, read and could not read, which ones failed and which files it did not read,
// so a combined output never looks complete when it is not.
import { MOTIVO_TEXTO, semParText, type Comparacao, type NaoAplicada } from '@censo/shared/local';
import { quote } from './failures.js';
import type { Ignored } from './folder.js';

export interface LoteSummary {
  /** Returns whose divergences were written. */
  readonly read: number;
  /** Returns that could not be used, by name (each also reported on stderr as it happened). */
  readonly failed: readonly string[];
  /** Subfolders that could not be read (not returns, so not counted among them). */
  readonly folders: readonly string[];
  /** Files that are not returns. */
  readonly ignored: readonly Ignored[];
  /** Divergences written (the header not counted). */
  readonly rows: number;
}

/** Names listed in a summary line before `e mais N`. */
const LISTED = 20;

function names(items: readonly string[]): string {
  const shown = items.slice(0, LISTED).join(', ');
  return items.length > LISTED ? `${shown} e mais ${items.length - LISTED}` : shown;
}

/**
 * `Retornos: 5 (3 lidos, 2 com falha); ignorados: 2; divergências gravadas: 18.`, then the names
 * of the failed returns and of the ignored files (with what to do about each), one line each.
 */
export function summaryText(summary: LoteSummary): string {
  const { read, failed, folders, ignored, rows } = summary;
  let text =
    `Retornos: ${read + failed.length} (${read} lidos, ${failed.length} com falha)` +
    (folders.length > 0 ? `; pastas sem leitura: ${folders.length}` : '') +
    `; ignorados: ${ignored.length}; divergências gravadas: ${rows}.\n`;
  if (failed.length > 0 || folders.length > 0) {
    text += `Com falha: ${names([...failed.map(quote), ...folders.map((folder) => `${quote(folder)} (pasta)`)])}.\n`;
  }
  if (ignored.length > 0) text += `Ignorados: ${ignoredText(ignored)}.\n`;
  return text;
}

/** `"a.xls" (Excel 97-2003: …), "b.pdf"`, sorted by name. */
export function ignoredText(ignored: readonly Ignored[]): string {
  const sorted = [...ignored].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return names(sorted.map(({ name, note }) => (note === null ? quote(name) : `${quote(name)} (${note})`)));
}

/** Exit 1 when anything that should have been read was not. */
export function incomplete(summary: LoteSummary): boolean {
  return summary.failed.length > 0 || summary.folders.length > 0;
}

/**
 * `censo comparar`'s lines on stderr: the totals, the schools paired by their folder, and every
 * school not compared with why (issue 50: a school left out is never only a count).
 */
export function comparacaoSummaryText(c: Comparacao): string {
  const { total, resumo, referencias_sem_par: semPar } = c;
  // What is left to do first (issue 56): a `grafia` divergence persists without anyone to act on it.
  let text =
    `Resolvidas: ${total.resolvidas}; persistentes: ${total.persistentes}; novas: ${total.novas}` +
    ` (pendentes: ${total.pendentes}; só grafia: ${total.grafia})`;
  text += semPar.length === 0 ? '\n' : `; escolas em só uma rodada (não comparadas): ${semPar.length}\n`;
  const renamed = resumo.filter((linha) => linha.referencia_anterior !== undefined);
  if (renamed.length > 0) {
    const pairs = renamed.map((linha) => `${quote(linha.referencia_anterior!)} → ${quote(linha.referencia)}`);
    text += `Pareadas pela pasta (arquivo renomeado): ${names(pairs)}.\n`;
  }
  for (const item of semPar.slice(0, LISTED)) {
    // The failure's own words end with a full stop, the line too: one of them.
    text += `Não comparada: ${quote(item.referencia)} (só na rodada ${item.rodada}: ${semParText(item).replace(/\.$/, '')}).\n`;
  }
  if (semPar.length > LISTED) text += `Não comparadas: e mais ${semPar.length - LISTED} (todas no resultado).\n`;
  return text;
}

/**
 * `censo corrigir`'s lines on stderr: the counts, then each correction the corrected file left
 * out (the first ones the job lists), with the rule that kept it out (SPEC §11).
 */
export function naoAplicadasText(counts: {
  readonly pessoasCorrigidas: number;
  readonly naoAplicadas: number;
  readonly amostra?: readonly NaoAplicada[];
  readonly pessoasRegra25?: number;
  readonly amostraRegra25?: readonly { readonly codigo_na_escola: string; readonly linha: string }[];
}): string {
  const lines = [
    `Pessoas corrigidas: ${counts.pessoasCorrigidas} (linhas de pessoas que o arquivo corrigido altera)`,
    `Correções não aplicadas: ${counts.naoAplicadas} (divergências destas pessoas que o arquivo corrigido não escreve, fora as só de grafia)`,
  ];
  const amostra = counts.amostra ?? [];
  for (const item of amostra) {
    lines.push(`  ${item.codigo_na_escola} (linha ${item.linha} do txt), ${item.campo}: ${item.correto}: ${MOTIVO_TEXTO[item.motivo]}.`);
  }
  if (counts.naoAplicadas > amostra.length) {
    lines.push(`  (as ${amostra.length} primeiras; a coluna correcao de censo divergencias diz de todas como corrigir)`);
  }
  const regra25 = counts.pessoasRegra25 ?? 0;
  if (regra25 > 0) {
    lines.push(
      `Pessoas que o INEP pode recusar (regra 25, descaracterização): ${regra25} (o arquivo leva o nome e a data de nascimento da ` +
        'Receita Federal; confirme os dados delas no formulário do Educacenso)',
    );
    const sample = counts.amostraRegra25 ?? [];
    for (const item of sample) lines.push(`  ${item.codigo_na_escola} (linha ${item.linha} do txt)`);
    if (regra25 > sample.length) lines.push(`  (as ${sample.length} primeiras)`);
  }
  return lines.join('\n') + '\n';
}
