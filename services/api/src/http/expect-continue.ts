// `Expect: 100-continue` (SPEC §5): a client that asks before sending its body gets `100 Continue`
// only once every check that could refuse the request has passed, so a refused upload is
// answered without the body ever being sent. Node answers 100 at once unless the server handles
// 'checkContinue'; the app does, marks the request, and the upload routes continue it here.
import type { IncomingMessage, Server } from 'node:http';
import type { preHandlerHookHandler } from 'fastify';

const EXPECTS_CONTINUE = Symbol('expectsContinue');

type MarkedRequest = IncomingMessage & { [EXPECTS_CONTINUE]?: boolean };

/** Routes 'checkContinue' requests as ordinary ones, marked, without answering 100. */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (request: MarkedRequest, response) => {
    request[EXPECTS_CONTINUE] = true;
    server.emit('request', request, response);
  });
}

/** Route-level preHandler of the routes that read a body: the request was admitted. */
export const continueIfExpected: preHandlerHookHandler = async (request, reply) => {
  const raw = request.raw as MarkedRequest;
  if (raw[EXPECTS_CONTINUE] && !reply.raw.headersSent) {
    raw[EXPECTS_CONTINUE] = false;
    reply.raw.writeContinue();
  }
};
