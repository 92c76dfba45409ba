// GET /api/lotes/{id}/corrigidos (issue 56): the batch's corrected census files together, one per
// school, in a zip the secretariat sends on (or imports school by school). Each part is a concluded
// censo-corrigido task's stored result, byte for byte the file its own task answers, named after the
// task's school (`referencia`, else its txt's name). Read as /resumo reads the batch: the same
// owner rule, the same 409 before `concluido` unless `?parcial=true`. Streamed: nothing is held.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { CensoError, zipArchive, type Storage, type ZipPart } from '@censo/shared';
import { annotateRequestLog } from '../../http/request-annotations.js';
import { attachment } from '../../http/content-disposition.js';
import { loteNaoEncontrado } from '../../tarefas/errors.js';
import { isId, RESULT_FILE, type TarefaRecord } from '../../tarefas/model.js';
import type { TarefasService } from '../../tarefas/service.js';
import { apiKeySecurity, errorResponses } from '../schemas.js';
import { loteParaResposta, parcialOf } from './results.js';
import { idParam, readErrors } from './schemas.js';

/** 404: the batch has no corrected file (its files were sent to divergencias-rf or retorno-rf only). */
export class SemCorrigidosError extends CensoError {
  readonly status = 404;
  readonly code = 'SEM_CORRIGIDOS';
  constructor() {
    super('O lote não tem arquivos corrigidos: envie o retorno e o txt de cada escola em /api/lotes/{id}/censo-corrigido.');
  }
}

const loteCorrigidosSchema = {
  tags: ['lotes'],
  summary: 'Os arquivos corrigidos do lote num zip, um por escola',
  description:
    'Um `.zip` com o arquivo corrigido de cada tarefa `censo-corrigido` concluída do lote, os mesmos bytes de ' +
    '`GET /api/tarefas/{id}/resultado`, cada um com o nome da escola (`referencia`, senão o nome do txt) e `-corrigido.txt`. ' +
    'Como `/resumo`: 409 antes de o lote estar concluído, salvo com `parcial=true`.',
  security: apiKeySecurity,
  params: idParam,
  response: {
    200: {
      description: 'O zip (`Content-Disposition: attachment`).',
      content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
    },
    ...errorResponses({
      404: 'Id desconhecido, apagado ou expirado: `Lote não encontrado.`; ou um lote sem arquivo corrigido.',
      409: '`Lote ainda não concluído.` (com Retry-After), antes de o lote estar concluido e sem `parcial=true`.',
    }),
    ...readErrors,
  },
} as const;

/** A part's name: the school (or the txt's name), only what a file name in any system takes, unique in the archive. */
function partName(record: TarefaRecord, taken: Set<string>): string {
  const base =
    (record.referencia ?? record.txtName?.replace(/\.txt$/i, '') ?? record.id)
      .normalize('NFC')
      // eslint-disable-next-line no-control-regex -- control characters are what a file name cannot hold
      .replace(/[\\/:*?"<>|\u0000-\u001f]+/g, '-')
      .replace(/^[\s.-]+|[\s.]+$/g, '')
      .slice(0, 120) || record.id;
  let name = `${base}-corrigido.txt`;
  for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base} (${n})-corrigido.txt`;
  taken.add(name.toLowerCase());
  return name;
}

/** The batch's concluded censo-corrigido tasks, in creation order. */
async function corrigidasDoLote(service: TarefasService, loteId: string): Promise<TarefaRecord[]> {
  const out: TarefaRecord[] = [];
  for await (const record of service.listagens.loteTarefas(loteId)) {
    if (record.rota === 'censo-corrigido' && record.estado === 'concluida') out.push(record);
  }
  return out;
}

async function* parts(storage: Storage, records: readonly TarefaRecord[]): AsyncGenerator<ZipPart> {
  const taken = new Set<string>();
  for (const record of records) {
    const stored = (await storage.area(record.id).read(RESULT_FILE)) as AsyncIterable<Buffer>;
    yield { name: partName(record, taken), data: stored };
  }
}

/** Registers GET /api/lotes/{id}/corrigidos on the batches' routes. */
export function corrigidosRoute(app: FastifyInstance): void {
  const { service, storage } = app.tarefas;
  app.get<{ Params: { id: string } }>(
    '/api/lotes/:id/corrigidos',
    { schema: loteCorrigidosSchema, validatorCompiler: () => () => true },
    async (request, reply) => {
      const { id } = request.params;
      if (!isId(id)) throw loteNaoEncontrado();
      annotateRequestLog(request, { lote: id });
      await loteParaResposta(service, request, reply, id, parcialOf(request.query));
      const records = await corrigidasDoLote(service, id);
      if (records.length === 0) throw new SemCorrigidosError();
      reply.type('application/zip').header('content-disposition', attachment(`corrigidos-lote-${id}.zip`));
      return reply.send(Readable.from(zipArchive(parts(storage, records))));
    },
  );
}
