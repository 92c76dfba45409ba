// Answers to requests that never reach Fastify's router: Node's HTTP parser refused them
// (oversized headers, malformed framing, headers too slow). Fastify's default writes an
// `{"error": …}` body; SPEC §5 wants `{"erro": …}` from every answer, so this writes the
// response itself and then lingers, like any early answer, so the client can read it.
import type { Socket } from 'node:net';
import type { Lingerer } from './lingering-close.js';

interface ClientErrorAnswer {
  readonly status: number;
  readonly reason: string;
  readonly erro: string;
}

const HEADERS_TOO_LARGE: ClientErrorAnswer = {
  status: 431,
  reason: 'Request Header Fields Too Large',
  erro: 'Cabeçalhos da requisição grandes demais.',
};
const TIMEOUT: ClientErrorAnswer = { status: 408, reason: 'Request Timeout', erro: 'Tempo esgotado ao receber a requisição.' };
const MALFORMED: ClientErrorAnswer = { status: 400, reason: 'Bad Request', erro: 'Requisição HTTP malformada.' };

export function clientErrorAnswer(err: NodeJS.ErrnoException): ClientErrorAnswer {
  if (err.code === 'HPE_HEADER_OVERFLOW') return HEADERS_TOO_LARGE;
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return TIMEOUT;
  return MALFORMED;
}

export function answerClientError(lingerer: Lingerer) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    // The peer is gone or the socket is already answered: nothing to write.
    if (err.code === 'ECONNRESET' || !socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const answer = clientErrorAnswer(err);
    const body = JSON.stringify({ erro: answer.erro });
    socket.write(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        // As every other answer of the service (plugins/security-headers.ts).
        'X-Content-Type-Options: nosniff\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    lingerer.linger(socket, null);
  };
}
