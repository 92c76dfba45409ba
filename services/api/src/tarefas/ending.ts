// What a task's end writes: its record's final fields, from what its job did, and the counts its
// batch keeps of divergencias-rf tasks (service.ts commits both together).
import { ERRORS, httpMessages, type JobResult } from '@censo/shared';
import type { JobObservation } from './execution.js';
import type { EstadoFinal, LoteRecord, TarefaRecord } from './model.js';

/** A finished task's fields, from what its job did. */
export function ending(
  observation: JobObservation,
  now: number,
): {
  estado: EstadoFinal;
  erro: TarefaRecord['erro'];
  resultado: TarefaRecord['resultado'];
  iniciadaEm: number | null;
  concluidaEm: number;
} {
  const times =
    observation.state === 'done' || observation.state === 'failed'
      ? { iniciadaEm: observation.startedAt, concluidaEm: observation.finishedAt }
      : { iniciadaEm: null, concluidaEm: now };
  if (observation.state === 'done') {
    const result: JobResult = observation.result;
    if (result.ok) {
      const resultado = {
        bytes: result.bytes,
        count: result.count,
        ...(result.escola !== undefined ? { escola: result.escola } : {}),
        ...(result.corrigido ? { corrigido: result.corrigido } : {}),
      };
      return { estado: 'concluida', erro: null, resultado, ...times };
    }
    return { estado: 'falhou', erro: { status: result.status, erro: result.erro }, resultado: null, ...times };
  }
  if (observation.state === 'failed' && observation.why === 'timeout') {
    return { estado: 'falhou', erro: { status: ERRORS.JOB_TIMEOUT.status, erro: ERRORS.JOB_TIMEOUT.message }, resultado: null, ...times };
  }
  if (observation.state === 'failed' && observation.why === 'error') {
    return { estado: 'falhou', erro: { status: 500, erro: httpMessages.internal }, resultado: null, ...times };
  }
  // Stopped on request, or removed from the queue by someone else.
  return { estado: 'cancelada', erro: null, resultado: null, ...times };
}

/**
 * The batch's `divergencias-rf` counts after one of its tasks reached (`delta` +1) or left (-1)
 * `estado`; nothing for other routes and states. A record from before the counts existed keeps none.
 */
export function divergenciasCount(lote: LoteRecord, task: TarefaRecord, estado: EstadoFinal, delta: 1 | -1): Partial<LoteRecord> {
  if (task.rota !== 'divergencias-rf' || estado === 'cancelada' || lote.divergencias === undefined) return {};
  return { divergencias: { ...lote.divergencias, [estado]: lote.divergencias[estado] + delta } };
}
