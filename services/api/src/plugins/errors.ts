// The only place that builds `{ "erro": ... }` bodies. Domain errors carry their status and
// Portuguese message; Fastify and multipart codes are translated to the SPEC's statuses;
// anything else is a logged 500 with a fixed message and no details (SPEC §5).
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BadInputError, CensoError, FileTooLargeError, badInput, httpMessages } from '@censo/shared';
import { CLIENT_CLOSED_REQUEST } from './request-log.js';
import { securityHeadersPlugin } from './security-headers.js';

/** Fastify / @fastify/multipart codes that are the client's fault, as our errors. */
function translate(err: FastifyError): CensoError | null {
  switch (err.code) {
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new FileTooLargeError();
    // 406 upstream, 400 for us (SPEC §5: not multipart → 400).
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badInput.notMultipart();
    case 'FST_FILES_LIMIT':
      return new BadInputError('Arquivos demais na requisição.');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new BadInputError('Campos demais na requisição.');
    case 'FST_PROTO_VIOLATION':
      return new BadInputError('Nome de campo não permitido.');
    case 'FST_MP_PREMATURE_CLOSE':
      return new BadInputError('A requisição terminou antes do fim do envio.');
    default:
      break;
  }
  // busboy's own parse errors ("Multipart: Boundary not found", "Unexpected end of form", and
  // "Part terminated early ..." when the body ends inside a file part)
  if (/^(Multipart|Malformed|Unexpected end of (form|multipart)|Part terminated early)/i.test(err.message)) {
    return badInput.malformedMultipart();
  }
  if (err.validation) {
    return new BadInputError(`Parâmetros inválidos: ${err.message}`);
  }
  return null;
}

/**
 * An erro as the info-level log may hold it: cut before its first `:`, `(` or `"`, where every
 * message puts what it quotes of the request or its files (a linha, a header, a field name).
 * `Arquivo retorno ilegível …`, `O arquivo txt não corresponde ao retorno …`: the kind of refusal
 * without its content. The whole erro is logged at debug only.
 */
export function withoutQuotes(message: string): string {
  const cut = message.search(/[:("]/);
  return cut === -1 ? message : `${message.slice(0, cut).trimEnd()} …`;
}

export function toCensoError(err: unknown): CensoError | null {
  if (err instanceof CensoError) return err;
  if (err instanceof Error) return translate(err as FastifyError);
  return null;
}

async function errorHandling(app: FastifyInstance): Promise<void> {
  // Here, in the first plugin app.ts registers, so that the headers every answer must carry
  // (nosniff, issue 50) are on the errors and 404s this plugin answers as on every route.
  await app.register(securityHeadersPlugin);
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // The client went away (upload cut, request abandoned while its job ran): nobody will read
    // this answer, and it is not a server fault, so no stack trace at error level.
    const known = toCensoError(err);
    if (reply.raw.destroyed) {
      request.log.info({ code: known?.code ?? err.code }, 'client closed the connection before the response');
      request.log.debug({ reason: err.message }, 'client closed the connection before the response');
      return reply.code(CLIENT_CLOSED_REQUEST).send({ erro: httpMessages.clientGone });
    }
    if (known) {
      // A 5xx of ours (queue, database, storage down) is an operator's problem: keep the cause.
      // Its message is one of the fixed texts of ERRORS, never the client's input.
      if (known.status >= 500) {
        request.log.warn({ code: known.code, status: known.status, err: known.cause }, known.message);
      } else {
        // A 4xx may quote the request or its files (a linha, a header): above debug, only its kind.
        request.log.info({ code: known.code, status: known.status, erro: withoutQuotes(known.message) }, 'request refused');
        request.log.debug({ code: known.code, status: known.status, erro: known.message }, 'request refused');
      }
      // A refusal that knows when it ends (MAX_LOTES_POR_HORA's oldest minute) says so.
      if ('retryAfterSeconds' in known && typeof known.retryAfterSeconds === 'number') {
        reply.header('retry-after', String(known.retryAfterSeconds));
      }
      if (known.status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '5');
      return reply.code(known.status).send({ erro: known.message });
    }
    const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
    if (status >= 400 && status < 500) {
      // Fastify's own messages quote the request (a content type, a URL): the error at debug only.
      request.log.info({ code: err.code, status }, 'client error');
      request.log.debug({ err }, 'client error');
      return reply.code(status).send({ erro: err.message });
    }
    // The path without its query string, whose filter values may be personal data.
    request.log.error({ err, method: request.method, path: request.url.split('?', 1)[0] }, 'unhandled error');
    return reply.code(500).send({ erro: httpMessages.internal });
  });

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ erro: httpMessages.notFound }));
}

/** The one error handler and the 404 handler, on the root instance. */
export const errorsPlugin = fp(errorHandling, { name: 'censo-errors', fastify: '5.x' });
