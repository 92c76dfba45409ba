// What the three upload routes (SPEC §3.1, §3.2, §3.4) accept and how their answers look, shared
// by the synchronous routes and the asynchronous tasks (SPEC §7.1), whose result must be the same
// answer: same type, same headers.
import type { FastifyReply, onRequestHookHandler } from 'fastify';
import { BadInputError, OUTPUT_FORMATS, type JobData, type JobResult, type OutputFormat, type Rota } from '@censo/shared';
import type { ReceivedFiles, UploadField } from './uploads.js';
import { attachment, corrigidoFilename } from './content-disposition.js';

export type Kind = JobData['kind'];

export interface RouteSpec {
  readonly url: string;
  readonly rota: Rota;
  readonly kind: Kind;
  readonly fields: readonly UploadField[];
}

export const UPLOAD_ROUTES: readonly RouteSpec[] = [
  { url: '/api/divergencias-rf', rota: 'divergencias-rf', kind: 'divergencias', fields: ['retorno'] },
  { url: '/api/retorno-rf', rota: 'retorno-rf', kind: 'retorno-rf', fields: ['retorno', 'txt'] },
  { url: '/api/censo-corrigido', rota: 'censo-corrigido', kind: 'censo-corrigido', fields: ['retorno', 'txt'] },
];

export const FORMAT_ERROR = 'Parâmetro format deve ser json, csv ou xlsx.';

/** `?format=` of the list routes (SPEC §3.5), checked before the body is read. */
export function requestedFormat(query: unknown): OutputFormat | null {
  const format = (query as Record<string, unknown> | undefined)?.format;
  if (format === undefined) return 'json';
  return typeof format === 'string' && (OUTPUT_FORMATS as readonly string[]).includes(format) ? (format as OutputFormat) : null;
}

export const checkFormat: onRequestHookHandler = async (request) => {
  if (requestedFormat(request.query) === null) throw new BadInputError(FORMAT_ERROR);
};

export const LIST_NAMES: Readonly<Record<'divergencias' | 'retorno-rf', string>> = {
  divergencias: 'divergencias',
  'retorno-rf': 'pessoas',
};

export const CONTENT_TYPES: Readonly<Record<OutputFormat, string>> = {
  json: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

export function jobData(kind: Kind, files: Pick<ReceivedFiles, 'retorno' | 'txt'>, format: OutputFormat, resultPath: string): JobData {
  if (kind === 'divergencias') return { kind, retorno: files.retorno, format, resultPath };
  if (kind === 'retorno-rf') return { kind, retorno: files.retorno, txt: files.txt!, format, resultPath };
  return { kind, retorno: files.retorno, txt: files.txt!, resultPath };
}

/** Headers of a successful answer: the list formats of SPEC §3.5, the corrected file of §3.4. */
export function describeResult(
  reply: FastifyReply,
  kind: Kind,
  format: OutputFormat,
  txtName: string | null,
  result: Pick<Extract<JobResult, { ok: true }>, 'corrigido'>,
): void {
  if (kind === 'censo-corrigido') {
    reply
      .type('text/plain; charset=ISO-8859-1')
      .header('content-disposition', attachment(corrigidoFilename(txtName)))
      .header('censo-pessoas-corrigidas', String(result.corrigido?.pessoasCorrigidas ?? 0))
      .header('censo-correcoes-nao-aplicadas', String(result.corrigido?.naoAplicadas ?? 0))
      .header('censo-pessoas-regra-25', String(result.corrigido?.pessoasRegra25 ?? 0));
    return;
  }
  reply.type(CONTENT_TYPES[format]);
  if (format !== 'json') reply.header('content-disposition', attachment(`${LIST_NAMES[kind]}.${format}`));
}
