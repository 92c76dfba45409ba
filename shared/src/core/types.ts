// Domain and job types shared by the core, the API and the worker. Wire field names are the
// SPEC's, in Portuguese.

/** One data row of a return file, by column role (SPEC §1.2), every value as text. */
export interface RetornoRow {
  /** `null` when the row's sheet/array has no `registro` column (then it counts as record 30). */
  readonly registro: string | null;
  /** `null` when the row's sheet/array has no `linha` column (then persons match by code). */
  readonly linha: string | null;
  readonly codigo: string;
  readonly campo: string;
  readonly mensagem: string;
  /** `""` when the sheet/array has no `conteudo` column. */
  readonly conteudo: string;
}

export type Chave = 'cpf' | 'nome' | 'data_nascimento' | 'inep' | 'nome_mae' | 'nome_pai';

/** The fields the corrected file may rewrite from a divergence (SPEC §3.4). */
export type AppliedChave = 'cpf' | 'nome' | 'data_nascimento' | 'inep';

/**
 * How a divergence gets fixed (the divergence's `correcao`, SPEC §11): by the corrected file;
 * already in Educacenso (INEP recorded the Receita's mother's name itself, and the corrected file
 * writes the same); only on Educacenso's form; only by the citizen at the Receita; not at all
 * (the same value written another way).
 */
export type Correcao = 'arquivo' | 'educacenso' | 'formulario' | 'receita' | 'grafia';

/** Why a divergence is not fixed by the corrected file: the rule that decides it (SPEC §11). */
export type Motivo =
  /** Differs only in how the census writes it (accents, case, punctuation, spaces, date shape). */
  | 'grafia'
  /** Filiation: INEP itself records the Receita's name (field 8, rule 4); the file has no other field for it. */
  | 'filiacao'
  /** Filiação 1 and 2 swapped: the Receita's mother is already the file's filiação 2 (no change, rule 25). */
  | 'filiacao-trocada'
  /** A field the corrected file does not write (sexo, cor/raça…). */
  | 'outro-campo'
  /** The Receita's value cannot be written as the layout requires. */
  | 'layout'
  /** Field 5 rule 10: the CPF Educacenso already holds cannot be changed by migration. */
  | 'cpf-na-base'
  /** Field 5 rule 7: another person of the file has that CPF. */
  | 'cpf-de-outra-pessoa'
  /**
   * Field 5 rule 8: sent without a CPF the base holds (the Receita's CPF cannot be written), the
   * person's name, birth date and filiation are not updated.
   */
  | 'cpf-em-branco'
  /** General rule 25: the changes together would "descaracterizar" the person. */
  | 'regra-25';

/** A correction the corrected file leaves out, and why (SPEC §11). */
export interface NaoAplicada {
  readonly codigo_na_escola: string;
  readonly linha: string;
  readonly chave: Chave | null;
  /** The field in words (`CPF`, `Filiação 1`), or the return's own label for a field without `chave`. */
  readonly campo: string;
  readonly enviado: string;
  readonly correto: string;
  readonly correcao: Correcao;
  readonly motivo: Motivo;
}

/** One tax-authority divergence as a return row states it (SPEC §2), before its person is weighed. */
export interface DivergenciaLida {
  readonly codigo_na_escola: string;
  readonly linha: string;
  readonly campo: string;
  readonly enviado: string;
  readonly correto: string;
  readonly is_filiacao: boolean;
  readonly chave: Chave | null;
}

/**
 * One tax-authority divergence, exactly as `POST /api/divergencias-rf` answers it (SPEC §3.1):
 * the seed's seven fields and how it gets fixed (SPEC §11, issue 46).
 */
export interface Divergencia extends DivergenciaLida {
  readonly correcao: Correcao;
}

/** One corrected person, exactly as `POST /api/retorno-rf` answers it (SPEC §3.2). */
export interface Pessoa {
  readonly codigo_na_escola: string;
  readonly linha: string;
  readonly cpf: string;
  readonly nome: string;
  readonly data_nascimento: string;
  readonly inep: string;
  readonly nome_mae: string;
  /**
   * What the corrected file (SPEC §3.4) writes for this person in fields 5, 6, 7, 4 and 9, as the
   * layout writes them (decided, issue 56: the fields above are the Receita's values, and the file
   * may keep a value the rules refuse).
   */
  readonly arquivo_cpf: string;
  readonly arquivo_nome: string;
  readonly arquivo_data_nascimento: string;
  readonly arquivo_inep: string;
  readonly arquivo_nome_mae: string;
  /** The person's divergences the file does not write, `<campo>: <motivo>` each, `; ` between (SPEC §11). */
  readonly nao_aplicadas: string;
  /** The file writes the person although general rule 25 may refuse them (confirm on Educacenso's form). */
  readonly regra_25: boolean;
}

/** The service's three census routes, as a task's `rota` names them (SPEC §7.1). */
export type Rota = 'divergencias-rf' | 'retorno-rf' | 'censo-corrigido';

export type RetornoFormat = 'json' | 'xlsx';

/** Format of a list answer (SPEC §3.5). */
export type OutputFormat = 'json' | 'csv' | 'xlsx';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['json', 'csv', 'xlsx'];

export interface StoredFile {
  /** Where the upload is (server-generated name): a path on disk, or in S3 storage an object key. */
  readonly path: string;
}

export interface StoredRetorno extends StoredFile {
  readonly format: RetornoFormat;
}

/** What a job needs: file paths, never bytes. The result is written to `resultPath`. */
export type JobData =
  | {
      readonly kind: 'divergencias';
      readonly retorno: StoredRetorno;
      /** Absent means json: jobs enqueued by an older API during a rolling deploy still run. */
      readonly format?: OutputFormat;
      readonly resultPath: string;
      /** A batch's task: its divergences also as lines of the batch's combined CSV, these fields first (see BATCH_LINES_FILE). */
      readonly batchLines?: readonly string[];
    }
  | {
      readonly kind: 'retorno-rf';
      readonly retorno: StoredRetorno;
      readonly txt: StoredFile;
      readonly format?: OutputFormat;
      readonly resultPath: string;
    }
  | {
      /** The corrected census file (SPEC §3.4), always ISO-8859-1 text. */
      readonly kind: 'censo-corrigido';
      readonly retorno: StoredRetorno;
      readonly txt: StoredFile;
      readonly resultPath: string;
    };

/**
 * A batch's divergencias-rf task also writes its result in the form the batch's combined CSV
 * (SPEC §7.3) sends it, in this file beside its result: one CSV line a divergence, the job's
 * `batchLines` (the task's `referencia` and `arquivo`) first, no header. The combined answer then
 * sends these bytes as they are instead of parsing every task's JSON to write them again (issue
 * 35). Optional both ways: a worker from before it ignores the field, and a task without the file
 * is converted from its JSON as before. Its place follows from the result's, so the job data
 * (kept in Redis while the task waits) carries no second path.
 */
export const BATCH_LINES_FILE = 'resultado-lote.csv';

/** Where a job whose result is at `resultPath` (a path or an object key) writes its batch lines. */
export function batchLinesPath(resultPath: string): string {
  return resultPath.slice(0, resultPath.lastIndexOf('/') + 1) + BATCH_LINES_FILE;
}

export type JobKind = JobData['kind'];

/** The files a job writes: its result, and a batch task's combined-CSV lines. */
export function outputsOf(data: JobData): string[] {
  return data.kind === 'divergencias' && data.batchLines ? [data.resultPath, batchLinesPath(data.resultPath)] : [data.resultPath];
}

/**
 * What a job returns. Domain failures (a bad file, a txt that does not match) are results, not
 * job failures, so the queue never retries them; a thrown error means a bug or infrastructure.
 * On success the response body (`{"divergencias": [...]}` or `{"pessoas": [...]}`) is at
 * `resultPath`, and `count` says how many items it holds.
 */
export type JobResult =
  | {
      readonly ok: true;
      /** Items answered: divergences, persons, or for the corrected file the persons matched. */
      readonly count: number;
      readonly bytes: number;
      /**
       * Set for `divergencias`: the INEP code of the school the return is about (SPEC §1.2, issue
       * 54), null when the file carries none; absent from older workers, which reads as null.
       */
      readonly escola?: string | null;
      /** Set for `censo-corrigido` (SPEC §3.4 headers). */
      readonly corrigido?: {
        readonly pessoasCorrigidas: number;
        readonly naoAplicadas: number;
        /** The first corrections left out, with the rule that kept each out (SPEC §11); absent from older workers. */
        readonly amostra?: readonly NaoAplicada[];
        /** Persons written although general rule 25 may refuse them (SPEC §11, issue 56); absent from older workers. */
        readonly pessoasRegra25?: number;
        readonly amostraRegra25?: readonly { readonly codigo_na_escola: string; readonly linha: string }[];
      };
    }
  | { readonly ok: false; readonly status: 400 | 413 | 422 | 503; readonly code: string; readonly erro: string };
