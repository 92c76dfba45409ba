// POST /api/divergencias-rf, /api/retorno-rf and /api/censo-corrigido (SPEC §3.1, §3.2, §3.4).
// Each stores the upload, hands the file references to the job runner, and streams the job's result
// file back; they differ only in the files they accept, the job kind and how the answer is sent.
// With `Prefer: respond-async`, and on a batch's routes, the upload becomes a task answered later
// (SPEC §7, tarefas/intake.ts).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { JobRejectedError, JobTimeoutError, type Config, type Storage } from '@censo/shared';
import type { JobRunner } from '../jobs/runner.js';
import { receiveFiles, withRequestArea } from '../http/uploads.js';
import { checkUploadHeaders, limitInFlight } from '../http/admission.js';
import { continueIfExpected } from '../http/expect-continue.js';
import { annotateRequestLog } from '../http/request-annotations.js';
import { censoCorrigidoSchema, divergenciasSchema, retornoRfSchema } from './retorno-schemas.js';
import { checkFormat, describeResult, jobData, requestedFormat, UPLOAD_ROUTES } from '../http/retorno-answers.js';
import { RESULT_FILE } from '../tarefas/model.js';
import { admitTarefa, intakeTarefa, wantsAsync } from './tarefas/intake.js';
import { loteUploadSchema } from './tarefas/schemas.js';

export interface CensusReturnRoutesOptions {
  readonly config: Config;
  readonly runner: JobRunner;
  readonly storage: Storage;
}

const SCHEMAS: Readonly<Record<string, object>> = {
  '/api/divergencias-rf': divergenciasSchema,
  '/api/retorno-rf': retornoRfSchema,
  '/api/censo-corrigido': censoCorrigidoSchema,
};

async function routes(app: FastifyInstance, { config, runner, storage }: CensusReturnRoutesOptions): Promise<void> {
  const inFlight = limitInFlight(config.maxInFlightUploads);
  app.metrics.trackInFlightUploads(inFlight.current);

  for (const route of UPLOAD_ROUTES) {
    // Everything that can refuse the upload runs before the body is asked for (Expect: 100-continue)
    // or read: auth (the enclosing context), the headers, the format, the in-flight limit, the rate limit,
    // and with `Prefer: respond-async` the task's own admission (SPEC §7.1).
    const checks =
      route.kind === 'censo-corrigido' ? [checkUploadHeaders, inFlight.onRequest] : [checkUploadHeaders, checkFormat, inFlight.onRequest];
    const onRequest = [...checks, admitTarefa(app, route, { lote: false })];
    app.post(route.url, { schema: SCHEMAS[route.url]!, onRequest, preHandler: continueIfExpected }, async (request, reply) => {
      if (wantsAsync(request)) return intakeTarefa(app, request, reply, route, null);
      return withRequestArea(storage, request, reply, async (area, signal) => {
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

        describeResult(reply, route.kind, format, files.txtName, result);
        return reply.header('content-length', result.bytes).send(await area.read(RESULT_FILE));
      });
    });

    // The same upload into a batch (SPEC §7.3), always answered later; under the same in-flight limit.
    app.post<{ Params: { id: string } }>(
      `/api/lotes/:id/${route.rota}`,
      {
        schema: loteUploadSchema(route.rota),
        onRequest: [...checks, admitTarefa(app, route, { lote: true })],
        preHandler: continueIfExpected,
      },
      async (request, reply) => intakeTarefa(app, request, reply, route, request.params.id),
    );
  }
}

/** Encapsulated (its hooks stay its own), with the metrics it reports to declared. */
export const retornoRoutes = fp(routes, {
  name: 'censo-retorno-routes',
  fastify: '5.x',
  encapsulate: true,
  dependencies: ['censo-metrics', '@fastify/multipart', 'censo-tarefas'],
  decorators: { fastify: ['metrics', 'tarefas'] },
});
