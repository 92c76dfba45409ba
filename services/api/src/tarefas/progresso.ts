// A batch's summary and its comparison with an earlier round (SPEC §10), fed from the batch's tasks
// and results; the counting, judging and writing are the core's (progresso.ts), which `censo
// comparar` shares, so the route and the command give the same bytes.
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import {
  compararRodadas,
  comparacaoChunks,
  Resumo,
  resumoChunks,
  type Chave,
  type DivergenciaRodada,
  type OutputFormat,
  type Rodada,
  type Storage,
} from '@censo/shared';
import { attachment } from '../http/content-disposition.js';
import { CONTENT_TYPES } from '../http/census-answers.js';
import { loteDivergencias } from './results.js';
import type { TarefaRecord } from './model.js';
import type { TarefasService } from './service.js';

/** A summary of the batch: its divergencias-rf files (a cancelled one is not a file read) and their divergences by kind. */
async function resumoOf(service: TarefasService, storage: Storage, loteId: string): Promise<Resumo> {
  const resumo = new Resumo();
  // One pass over the batch: each file is counted as it is read, before its divergences.
  const arquivo = (record: TarefaRecord) => {
    if (record.rota === 'divergencias-rf' && record.estado !== 'cancelada')
      resumo.arquivo(record.referencia ?? '', record.estado === 'falhou');
  };
  for await (const item of loteDivergencias(service, storage, loteId, arquivo)) {
    resumo.divergencia(String(item.referencia), (item.chave as Chave | null) ?? null);
  }
  return resumo;
}

/** A round as the comparison sees it: the schools whose file was read (failed files are not), and the divergences. */
async function rodadaOf(service: TarefasService, storage: Storage, loteId: string): Promise<Rodada> {
  const referencias: string[] = [];
  for await (const record of service.loteTarefas(loteId)) {
    if (record.rota === 'divergencias-rf' && record.estado === 'concluida') referencias.push(record.referencia ?? '');
  }
  return { referencias, divergencias: loteDivergencias(service, storage, loteId) as AsyncIterable<DivergenciaRodada> };
}

function send(reply: FastifyReply, name: string, format: OutputFormat, chunks: AsyncIterable<string | Buffer>): FastifyReply {
  reply.type(CONTENT_TYPES[format]).header('content-disposition', attachment(`${name}.${format}`));
  return reply.send(Readable.from(chunks, { objectMode: false }));
}

/** GET /api/lotes/{id}/resumo (SPEC §10). */
export async function sendResumo(
  reply: FastifyReply,
  service: TarefasService,
  storage: Storage,
  loteId: string,
  format: OutputFormat,
): Promise<FastifyReply> {
  return send(reply, 'resumo', format, resumoChunks(await resumoOf(service, storage, loteId), format));
}

/** GET /api/lotes/{id}/comparacao?anterior= (SPEC §10). */
export async function sendComparacao(
  reply: FastifyReply,
  service: TarefasService,
  storage: Storage,
  ids: { readonly anterior: string; readonly atual: string },
  format: OutputFormat,
): Promise<FastifyReply> {
  const comparacao = await compararRodadas(await rodadaOf(service, storage, ids.anterior), await rodadaOf(service, storage, ids.atual));
  return send(reply, 'comparacao', format, comparacaoChunks(comparacao, format));
}
