// What a task and a batch are (SPEC §7): the records kept by the store, and the monitors the API
// answers. Records are the service's own (times in epoch ms); monitors are the SPEC's wire shape
// (Portuguese names, RFC 3339 times).
import { randomUUID } from 'node:crypto';
import { BATCH_LINES_FILE, type JobKind, type Rota } from '@censo/shared';

export type { Rota };
export type Formato = 'json' | 'csv' | 'xlsx' | 'txt';
export type EstadoTarefa = 'aguardando' | 'processando' | 'concluida' | 'falhou' | 'cancelada';
export type EstadoLote = 'aberto' | 'processando' | 'concluido' | 'cancelado';

/** The file a task's job writes its result to, in the task's area. */
export const RESULT_FILE = 'resultado';
/** Every file a task's job may leave in its area (a batch's divergencias-rf task: its lines of the combined CSV too). */
export const TASK_OUTPUTS: readonly string[] = [RESULT_FILE, BATCH_LINES_FILE];

export const ROTAS: readonly Rota[] = ['divergencias-rf', 'retorno-rf', 'censo-corrigido'];
export const KIND_OF: Readonly<Record<Rota, JobKind>> = {
  'divergencias-rf': 'divergencias',
  'retorno-rf': 'retorno-rf',
  'censo-corrigido': 'censo-corrigido',
};

export const ESTADOS_TAREFA: readonly EstadoTarefa[] = ['aguardando', 'processando', 'concluida', 'falhou', 'cancelada'];
export type EstadoFinal = Extract<EstadoTarefa, 'concluida' | 'falhou' | 'cancelada'>;
export const isFinal = (estado: EstadoTarefa): estado is EstadoFinal =>
  estado === 'concluida' || estado === 'falhou' || estado === 'cancelada';

/** What the synchronous route would have answered instead of a result. */
export interface ErroTarefa {
  readonly status: number;
  readonly erro: string;
}

/** A finished job's summary: what the result's headers need. */
export interface ResultadoTarefa {
  readonly bytes: number;
  readonly count: number;
  /**
   * A divergencias-rf task's school by its INEP code, when its return carried one (issue 54): the
   * same school in every round whatever the file's name. Absent on records of a version before it.
   */
  readonly escola?: string | null;
  readonly corrigido?: { readonly pessoasCorrigidas: number; readonly naoAplicadas: number; readonly pessoasRegra25?: number };
}

/** One uploaded file as the monitor lists it (SPEC §7.1): no personal data, only what identifies the bytes. */
export interface ArquivoTarefa {
  readonly campo: 'retorno' | 'txt';
  readonly nome: string;
  readonly bytes: number;
  readonly sha256: string;
}

/**
 * Who a task, a batch or an Idempotency-Key belongs to (SPEC §7.1): `integracao` for every value
 * of API_KEY (one principal, rotated), `pessoa:<sub>` for one signed-in person.
 */
export type Dono = string;

/**
 * Records written before ownership existed (a rolling upgrade from a version without it) were all
 * made with the integration's key or by a person under the old "the id is the secret" rule; they
 * are the integration's, so no person gains another's task through the upgrade.
 */
export const DONO_ANTERIOR: Dono = 'integracao';

export const donoOf = (record: { readonly dono?: Dono }): Dono => record.dono ?? DONO_ANTERIOR;

export interface TarefaRecord {
  readonly id: string;
  readonly dono: Dono;
  readonly rota: Rota;
  readonly formato: Formato;
  /** `aguardando` until the job's end is recorded; `processando` is read from the job itself. */
  readonly estado: 'aguardando' | EstadoFinal;
  readonly criadaEm: number;
  readonly iniciadaEm: number | null;
  readonly concluidaEm: number | null;
  /** A task of its own expires TTL after its end; a batch's task lives as long as its batch (null here). */
  readonly expiraEm: number | null;
  readonly erro: ErroTarefa | null;
  readonly resultado: ResultadoTarefa | null;
  readonly referencia: string | null;
  readonly lote: string | null;
  /** Position in its batch (keyset order); 0 outside a batch. */
  readonly seq: number;
  /** The uploaded retorno's and txt's names, as the client sent them (data, never paths). */
  readonly arquivo: string;
  readonly txtName: string | null;
  /** The upload's files, for a client that resumes to check the task holds the file it means. */
  readonly arquivos: readonly ArquivoTarefa[];
  /** Names of its upload's files in its storage area (deleted when the job ends). */
  readonly entradas: readonly string[];
  /** Its Idempotency-Key record, forgotten with the task. */
  readonly idem: string | null;
  /** The group job that carries it with other tasks of its request (TAREFAS_POR_JOB); absent: a job of its own. */
  readonly grupo?: string;
}

/** How many of a batch's `divergencias-rf` tasks ended each way (the `Lote-Tarefas-*` headers). */
export interface ContagemDivergencias {
  readonly concluida: number;
  readonly falhou: number;
}

export interface LoteRecord {
  readonly id: string;
  readonly dono: Dono;
  readonly nome: string | null;
  readonly estado: Exclude<EstadoLote, 'cancelado'>;
  readonly criadoEm: number;
  readonly fechadoEm: number | null;
  readonly concluidoEm: number | null;
  readonly expiraEm: number | null;
  /** When the last file came in (a batch open 24 h without one closes itself). */
  readonly ultimoEnvioEm: number;
  /** Tasks ever added and not deleted, and how many of them ended each way. */
  readonly total: number;
  readonly concluida: number;
  readonly falhou: number;
  readonly cancelada: number;
  /** Absent on records of a version before it: counted from the tasks then (results.ts). */
  readonly divergencias?: ContagemDivergencias;
  /** The last task's position. */
  readonly seq: number;
  readonly webhook: { readonly url: string; readonly segredo: string } | null;
  /** Its Idempotency-Key record, forgotten with the batch. */
  readonly idem: string | null;
  /**
   * The W3C traceparent of the request that created it (ids only, never shown): each file's trace
   * links to it (issue 56). Absent with tracing off and on records of a version before it.
   */
  readonly rastro?: string;
}

export interface Contagens {
  readonly total: number;
  readonly aguardando: number;
  readonly processando: number;
  readonly concluida: number;
  readonly falhou: number;
  readonly cancelada: number;
}

export interface TarefaMonitor {
  readonly id: string;
  readonly rota: Rota;
  readonly formato: Formato;
  readonly estado: EstadoTarefa;
  readonly criada_em: string;
  readonly iniciada_em: string | null;
  readonly concluida_em: string | null;
  readonly expira_em: string | null;
  readonly resultado: string | null;
  readonly erro: ErroTarefa | null;
  readonly referencia: string | null;
  readonly lote: string | null;
  readonly arquivos: readonly ArquivoTarefa[];
}

export interface LoteMonitor {
  readonly id: string;
  readonly nome: string | null;
  readonly estado: EstadoLote;
  readonly criado_em: string;
  readonly fechado_em: string | null;
  readonly concluido_em: string | null;
  readonly expira_em: string | null;
  readonly tarefas: Contagens;
}

/** An opaque, URL-safe, unguessable id: a version 4 UUID holds 122 random bits (SPEC §7.1). */
export function newId(): string {
  return randomUUID();
}

/** Ids as the service makes them; anything else is not found without asking the store. */
export function isId(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(value);
}

/** RFC 3339 in UTC, to the second. */
export function rfc3339(ms: number): string;
export function rfc3339(ms: number | null): string | null;
export function rfc3339(ms: number | null): string | null {
  return ms === null ? null : new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The state a task shows: its record's, or `processando` while its job runs. */
export interface TarefaAgora {
  readonly record: TarefaRecord;
  readonly estado: EstadoTarefa;
  readonly iniciadaEm: number | null;
}

export function tarefaMonitor({ record, estado, iniciadaEm }: TarefaAgora, loteExpiraEm: number | null): TarefaMonitor {
  return {
    id: record.id,
    rota: record.rota,
    formato: record.formato,
    estado,
    criada_em: rfc3339(record.criadaEm),
    iniciada_em: rfc3339(iniciadaEm),
    concluida_em: rfc3339(record.concluidaEm),
    expira_em: rfc3339(record.lote === null ? record.expiraEm : isFinal(estado) ? loteExpiraEm : null),
    resultado: estado === 'concluida' ? `/api/tarefas/${record.id}/resultado` : null,
    erro: estado === 'falhou' ? record.erro : null,
    referencia: record.referencia,
    lote: record.lote,
    arquivos: record.arquivos ?? [],
  };
}

export function contagens(lote: Pick<LoteRecord, 'total' | 'concluida' | 'falhou' | 'cancelada'>, processando: number): Contagens {
  const unfinished = Math.max(0, lote.total - lote.concluida - lote.falhou - lote.cancelada);
  const running = Math.min(processando, unfinished);
  return {
    total: lote.total,
    aguardando: unfinished - running,
    processando: running,
    concluida: lote.concluida,
    falhou: lote.falhou,
    cancelada: lote.cancelada,
  };
}

export function loteMonitor(lote: LoteRecord, processando: number): LoteMonitor {
  return {
    id: lote.id,
    nome: lote.nome,
    estado: lote.estado,
    criado_em: rfc3339(lote.criadoEm),
    fechado_em: rfc3339(lote.fechadoEm),
    concluido_em: rfc3339(lote.concluidoEm),
    expira_em: rfc3339(lote.expiraEm),
    tarefas: contagens(lote, processando),
  };
}

/** `dono` given: the record only if it is that principal's (any other gets what an unknown id gets). */
export function owned<T extends { readonly dono?: Dono }>(record: T | null, dono: Dono | undefined): T | null {
  if (record === null || dono === undefined) return record;
  return donoOf(record) === dono ? record : null;
}
