// The storage seen from a trace (SPEC §12): each read, write and removal of a request's files is a
// span, a child of the request's or the job's. Only the storage's kind, the request's id and the
// file's name (the server's own: retorno, txt, resultado) are recorded, never a byte of a file.
import type { Readable } from 'node:stream';
import { SpanStatusCode } from '@opentelemetry/api';
import { inSpan, startSpan } from '../runtime/telemetry.js';
import type { RequestArea, Storage } from './port.js';

export function tracedStorage(storage: Storage): Storage {
  const kind = storage.kind;
  return {
    kind,
    area(id) {
      const area = storage.area(id);
      const attrs = (file?: string) => ({
        'censo.storage.kind': kind,
        'censo.request.id': id,
        ...(file ? { 'censo.storage.file': file } : {}),
      });
      const traced: RequestArea = {
        id: area.id,
        open: () => inSpan('storage open', attrs(), () => area.open()),
        ref: (name) => area.ref(name),
        write: (name, source, counter, signal) =>
          inSpan('storage write', attrs(name), async (span) => {
            try {
              return await area.write(name, source, counter, signal);
            } finally {
              span?.setAttribute('censo.storage.bytes', counter.bytes);
            }
          }),
        // The span lasts as long as the stream: opening the file is the least of a download.
        read: async (name) => {
          const span = startSpan('storage read', attrs(name));
          try {
            const stream: Readable = await area.read(name);
            if (span) stream.once('close', () => span.end());
            return stream;
          } catch (err) {
            span?.setStatus({ code: SpanStatusCode.ERROR });
            span?.end();
            throw err;
          }
        },
        remove: () => inSpan('storage remove', attrs(), () => area.remove()),
        discard: (names) => inSpan('storage discard', { ...attrs(), 'censo.storage.files': names.length }, () => area.discard(names)),
      };
      return traced;
    },
    checkJobData: (data) => storage.checkJobData(data),
    inputsExist: (data) => inSpan('storage inputs exist', { 'censo.storage.kind': kind }, () => storage.inputsExist(data)),
    // With S3: the inputs' download to the worker's scratch folder, the job, the result's upload.
    runWithLocalFiles: (data, work, signal) =>
      inSpan('storage local files', { 'censo.storage.kind': kind, 'censo.job.kind': data.kind }, () =>
        storage.runWithLocalFiles(data, work, signal),
      ),
    isReady: () => storage.isReady(),
    close: () => storage.close(),
  };
}
