// `censo lote`'s unit of work on a job thread: several returns, one after another, each read
// through the divergence rules and written straight as the combined output's own text (CSV lines,
// JSON items or rows for the workbook, the file's name first) into one file per batch. The process
// that asked only copies byte ranges in order: parsing every file's divergences back from a result
// file and formatting them there kept the main thread as busy as a job thread, and one task per
// small file spent its time in hand-overs. The text is written synchronously (output/result-file.ts).
import { BUILTIN_FIELD_LABELS, comDivergencias } from './divergencias.js';
import { jobFailure } from './job.js';
import { csvLine } from './output/csv.js';
import { cellValues, DIVERGENCIA_COLUMNS } from './output/table.js';
import { LOTE_ARQUIVO_PLANILHA } from './output/planilha.js';
import { ResultFile } from './output/result-file.js';
import { readRetornoBatches } from './retorno/index.js';
import type { Divergencia, RetornoRow, StoredRetorno } from './types.js';
import type { Vocabulary } from './vocabulary.js';

export type LoteFormat = 'csv' | 'json' | 'xlsx';

/** The combined result's columns: the file's path in the folder, then a divergence's. */
export const LOTE_COLUMNS: readonly string[] = ['arquivo', ...DIVERGENCIA_COLUMNS];
/** The same in a workbook, in words (SPEC §3.5, session 4). */
export const LOTE_XLSX_COLUMNS: readonly string[] = LOTE_ARQUIVO_PLANILHA.columns;

/** One divergence of file `name` as the combined result's cells (CSV and workbook). */
export function loteCells(name: string, divergencia: Divergencia): string[] {
  return [name, ...cellValues(divergencia, DIVERGENCIA_COLUMNS)];
}

/** One divergence of file `name` as an item of the combined JSON list. */
export function loteJsonItem(name: string, divergencia: Divergencia): string {
  return JSON.stringify({ arquivo: name, ...divergencia });
}

export interface LoteBatchFile extends StoredRetorno {
  /** Its path below the folder: the `arquivo` column. */
  readonly name: string;
}

export interface LoteBatch {
  readonly files: readonly LoteBatchFile[];
  readonly format: LoteFormat;
  /** Every file's text, one after another; a failed file's partial text lies outside every range. */
  readonly resultPath: string;
  /**
   * Only the divergences of these kinds (`censo lote --dado`, issue 50): the words of `chave`,
   * `outro` for one without it. Absent: every divergence.
   */
  readonly dados?: readonly string[];
}

/** Whether a divergence is of one of `dados` (none given: every one is). */
export function ofDados(divergencia: Pick<Divergencia, 'chave'>, dados: readonly string[] | undefined): boolean {
  return dados === undefined || dados.includes(divergencia.chave ?? 'outro');
}

/**
 * A file's text is bytes [start, end) of the batch's result: CSV lines; JSON items joined by `,`
 * (the caller puts the list around them and a `,` between files); or, for a workbook, a JSON array
 * of rows of cells.
 */
export type LoteFileOutcome =
  | { readonly ok: true; readonly start: number; readonly end: number; readonly rows: number }
  /** A file the service would refuse, with the API's `erro`. */
  | { readonly ok: false; readonly erro: string }
  /** Anything else thrown while reading it (the file system, a bug): the caller words it. */
  | { readonly ok: false; readonly thrown: Error };

export async function runLoteBatch(batch: LoteBatch, options: { readonly vocabulary?: Vocabulary } = {}): Promise<LoteFileOutcome[]> {
  const { vocabulary } = options;
  const out = new ResultFile(batch.resultPath);
  const outcomes: LoteFileOutcome[] = [];
  try {
    for (const file of batch.files) {
      let start = out.position();
      try {
        const labels = vocabulary?.labels ?? BUILTIN_FIELD_LABELS;
        const open = (): AsyncIterable<readonly RetornoRow[]> => readRetornoBatches(file, vocabulary ? { names: vocabulary.columns } : {});
        // A second reading (the file's persons came apart) writes the file's rows afresh after the
        // first's: only the outcome's byte range is ever copied.
        const rows = await comDivergencias(open, labels, async (divergencias) => {
          out.discardFrom(start);
          start = out.position();
          let written = 0;
          if (batch.format === 'xlsx') out.add('[');
          for await (const found of divergencias) {
            for (const divergencia of found) {
              if (!ofDados(divergencia, batch.dados)) continue;
              if (batch.format === 'csv') out.add(csvLine(loteCells(file.name, divergencia)));
              else if (batch.format === 'json') out.add((written === 0 ? '' : ',') + loteJsonItem(file.name, divergencia));
              else
                out.add((written === 0 ? '' : ',') + JSON.stringify(LOTE_ARQUIVO_PLANILHA.cells({ arquivo: file.name, ...divergencia })));
              written++;
            }
          }
          if (batch.format === 'xlsx') out.add(']');
          return written;
        });
        const end = out.position();
        // A workbook file without divergences still has its `[]`: an empty range is simpler to skip.
        outcomes.push(rows === 0 ? { ok: true, start: end, end, rows } : { ok: true, start, end, rows });
      } catch (err) {
        out.discardFrom(start);
        const failure = jobFailure(err);
        outcomes.push(
          failure ? { ok: false, erro: failure.erro } : { ok: false, thrown: err instanceof Error ? err : new Error(String(err)) },
        );
      }
    }
    out.flush();
  } finally {
    out.close();
  }
  return outcomes;
}
