// POST /api/divergencias-rf and POST /api/retorno-rf (SPEC §3.1, §3.2). Both store the upload,
// hand the file paths to the job runner, and stream the job's result file back; they differ only
// in the files they accept and the job kind.
import { createReadStream } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { JobRejectedError, JobTimeoutError, type Config, type JobData } from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';
import { receiveFiles, withUploadFolder, type UploadField } from '../http/uploads.js';
import { checkUploadHeaders, limitInFlight } from '../http/admission.js';
import { continueIfExpected } from '../http/expect-continue.js';
import { annotateRequestLog } from '../plugins/request-log.js';
import { divergenciasSchema, retornoRfSchema } from './census-return-schemas.js';

export interface CensusReturnRoutesOptions {
  readonly config: Config;
  readonly runner: JobRunner;
}

interface RouteSpec {
  readonly url: string;
  readonly kind: JobData['kind'];
  readonly fields: readonly UploadField[];
  readonly schema: object;
}

const ROUTES: readonly RouteSpec[] = [
  { url: '/api/divergencias-rf', kind: 'divergencias', fields: ['retorno'], schema: divergenciasSchema },
  { url: '/api/retorno-rf', kind: 'retorno-rf', fields: ['retorno', 'txt'], schema: retornoRfSchema },
];

const RESULT_FILE = 'resultado.json';

async function routes(app: FastifyInstance, { config, runner }: CensusReturnRoutesOptions): Promise<void> {
  const inFlight = limitInFlight(config.maxInFlightUploads);
  app.metrics.trackInFlightUploads(inFlight.current);

  for (const route of ROUTES) {
    // Everything that can refuse the upload runs before the body is asked for (Expect: 100-continue)
    // or read: auth (the enclosing context), the headers, the in-flight limit, the rate limit.
    const onRequest = [checkUploadHeaders, inFlight.onRequest];
    app.post(route.url, { schema: route.schema, onRequest, preHandler: continueIfExpected }, async (request, reply) =>
      withUploadFolder(config.uploadDir, request, reply, async (folder, signal) => {
        const started = Date.now();
        annotateRequestLog(request, { jobId: folder.id, kind: route.kind });
        const files = await receiveFiles(request, folder, route.fields, {
          totalMs: Math.max(1, config.uploadTimeoutMs - reply.elapsedTime),
          idleMs: config.uploadIdleMs,
        });
        const resultPath = folder.file(RESULT_FILE);
        const data: JobData =
          route.kind === 'divergencias'
            ? { kind: 'divergencias', retorno: files.retorno, resultPath }
            : { kind: 'retorno-rf', retorno: files.retorno, txt: files.txt!, resultPath };

        const jobStarted = performance.now();
        const jobMs = () => Math.round(performance.now() - jobStarted);
        const result = await runner
          .run(data, { signal, id: folder.id, deadline: started + config.jobTimeoutMs })
          .catch((err: unknown) => {
            // The outcome feeds censo_jobs_total (plugins/metrics.ts) as well as the log line.
            const outcome = err instanceof JobTimeoutError ? 'timeout' : signal.aborted ? 'cancelled' : 'error';
            annotateRequestLog(request, { outcome, jobMs: jobMs() });
            throw err;
          });
        annotateRequestLog(
          request,
          result.ok
            ? { count: result.count, outcome: 'ok', jobMs: jobMs() }
            : { code: result.code, outcome: 'rejected', jobMs: jobMs() },
        );
        if (!result.ok) throw new JobRejectedError(result.status, result.code, result.erro);

        return reply
          .type('application/json; charset=utf-8')
          .header('content-length', result.bytes)
          .send(createReadStream(resultPath));
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
