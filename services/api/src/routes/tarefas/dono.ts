// Who is asking, as the owner of what it creates (SPEC §7.1): every API_KEY value is one principal
// (the integration, rotated), a signed-in person is another, one per `sub`.
import type { FastifyRequest } from 'fastify';
import type { Dono } from '../../tarefas/model.js';

export function donoOfRequest(request: FastifyRequest): Dono {
  const principal = request.principal;
  // The /api/* hooks set it before any handler runs; a route reached without one is a wiring bug.
  if (!principal) throw new Error('no principal on an authenticated route');
  return principal.kind === 'chave' ? 'integracao' : `pessoa:${principal.session.sub}`;
}
