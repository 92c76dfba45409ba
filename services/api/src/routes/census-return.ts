// POST /api/divergencias-rf, /api/retorno-rf and /api/censo-corrigido (SPEC §3.1, §3.2, §3.4).
// Each stores the upload, hands the file references to the job runner, and streams the job's result
// file back; they differ only in the files they accept, the job kind and how the answer is sent.
import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import {
  BadInputError,
  JobRejectedError,
  JobTimeoutError,
  OUTPUT_FORMATS,
  type Config,
  type JobData,
  type JobResult,
  type OutputFormat,
  type Storage,
} from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';
import { receiveFiles, withRequestArea, type ReceivedFiles, type UploadField } from '../http/uploads.js';
import { checkUploadHeaders, limitInFlight } from '../http/admission.js';
import { continueIfExpected } from '../http/expect-continue.js';
import { annotateRequestLog } from '../plugins/request-log.js';
import { attachment, corrigidoFilename } from '../http/content-disposition.js';
import { censoCorrigidoSchema, divergenciasSchema, retornoRfSchema } from './census-return-schemas.js';

export interface CensusReturnRoutesOptions {
  readonly config: Config;
  readonly runner: JobRunner;
  readonly storage: Storage;
}

type Kind = JobData['kind'];

interface RouteSpec {
  readonly url: string;
  readonly kind: Kind;
  readonly fields: readonly UploadField[];
  readonly schema: object;
}

const ROUTES: readonly RouteSpec[] = [
  { url: '/api/divergencias-rf', kind: 'divergencias', fields: ['retorno'], schema: divergenciasSchema },
  { url: '/api/retorno-rf', kind: 'retorno-rf', fields: ['retorno', 'txt'], schema: retornoRfSchema },
  { url: '/api/censo-corrigido', kind: 'censo-corrigido', fields: ['retorno', 'txt'], schema: censoCorrigidoSchema },
];

const RESULT_FILE = 'resultado';

const FORMAT_ERROR = 'Parâmetro format deve ser json, csv ou xlsx.';

/** `?format=` of the list routes (SPEC §3.5), checked before the body is read. */
function requestedFormat(query: unknown): OutputFormat | null {
  const format = (query as Record<string, unknown> | undefined)?.format;
  if (format === undefined) return 'json';
  return typeof format === 'string' && (OUTPUT_FORMATS as readonly string[]).includes(format) ? (format as OutputFormat) : null;
}

const checkFormat: onRequestHookHandler = async (request) => {
  if (requestedFormat(request.query) === null) throw new BadInputError(FORMAT_ERROR);
};

const LIST_NAMES: Readonly<Record<'divergencias' | 'retorno-rf', string>> = { divergencias: 'divergencias', 'retorno-rf': 'pessoas' };

const CONTENT_TYPES: Readonly<Record<OutputFormat, string>> = {
  json: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

function jobData(kind: Kind, files: ReceivedFiles, format: OutputFormat, resultPath: string): JobData {
  if (kind === 'divergencias') return { kind, retorno: files.retorno, format, resultPath };
  if (kind === 'retorno-rf') return { kind, retorno: files.retorno, txt: files.txt!, format, resultPath };
  return { kind, retorno: files.retorno, txt: files.txt!, resultPath };
}

/** Headers of a successful answer: the list formats of SPEC §3.5, the corrected file of §3.4. */
function describeResult(
  reply: FastifyReply,
  kind: Kind,
  format: OutputFormat,
  files: ReceivedFiles,
  result: Extract<JobResult, { ok: true }>,
): void {
  if (kind === 'censo-corrigido') {
    reply
      .type('text/plain; charset=ISO-8859-1')
      .header('content-disposition', attachment(corrigidoFilename(files.txtName)))
      .header('censo-pessoas-corrigidas', String(result.corrigido?.pessoasCorrigidas ?? 0))
      .header('censo-correcoes-nao-aplicadas', String(result.corrigido?.naoAplicadas ?? 0));
    return;
  }
  reply.type(CONTENT_TYPES[format]);
  if (format !== 'json') reply.header('content-disposition', attachment(`${LIST_NAMES[kind]}.${format}`));
}

async function routes(app: FastifyInstance, { config, runner, storage }: CensusReturnRoutesOptions): Promise<void> {
  const inFlight = limitInFlight(config.maxInFlightUploads);
  app.metrics.trackInFlightUploads(inFlight.current);

  for (const route of ROUTES) {
    // Everything that can refuse the upload runs before the body is asked for (Expect: 100-continue)
    // or read: auth (the enclosing context), the headers, the format, the in-flight limit, the rate limit.
    const onRequest =
      route.kind === 'censo-corrigido' ? [checkUploadHeaders, inFlight.onRequest] : [checkUploadHeaders, checkFormat, inFlight.onRequest];
    app.post(route.url, { schema: route.schema, onRequest, preHandler: continueIfExpected }, async (request, reply) =>
      withRequestArea(storage, request, reply, async (area, signal) => {
        const started = Date.now();
        const format = route.kind === 'censo-corrigido' ? 'json' : (requestedFormat(request.query) ?? 'json');
        annotateRequestLog(request, { jobId: area.id, kind: route.kind });
        const files = await receiveFiles(request, area, route.fields, {
          totalMs: Math.max(1, config.uploadTimeoutMs - reply.elapsedTime),
          idleMs: config.uploadIdleMs,
        });
        const resultPath = area.ref(RESULT_FILE);
        const data = jobData(route.kind, files, format, resultPath);

        const jobStarted = performance.now();
        const jobMs = () => Math.round(performance.now() - jobStarted);
        const result = await runner.run(data, { signal, id: area.id, deadline: started + config.jobTimeoutMs }).catch((err: unknown) => {
          // The outcome feeds censo_jobs_total (plugins/metrics.ts) as well as the log line.
          const outcome = err instanceof JobTimeoutError ? 'timeout' : signal.aborted ? 'cancelled' : 'error';
          annotateRequestLog(request, { outcome, jobMs: jobMs() });
          throw err;
        });
        annotateRequestLog(
          request,
          result.ok ? { count: result.count, outcome: 'ok', jobMs: jobMs() } : { code: result.code, outcome: 'rejected', jobMs: jobMs() },
        );
        if (!result.ok) throw new JobRejectedError(result.status, result.code, result.erro);

        describeResult(reply, route.kind, format, files, result);
        return reply.header('content-length', result.bytes).send(await area.read(RESULT_FILE));
      }),
    );
  }
}

/** Encapsulated (its hooks stay its own), with the metrics it reports to declared. */
export const censusReturnRoutes = fp(routes, {
  name: 'censo-census-return-routes',
  fastify: '5.x',
  encapsulate: true,
  dependencies: ['censo-metrics', '@fastify/multipart'],
  decorators: { fastify: ['metrics'] },
});
