// JSON schemas shared by the routes. They document the API (OpenAPI at /docs/json) and, where a
// route has a response schema, serialise it: one source for both.

export const erroSchema = {
  $id: 'Erro',
  type: 'object',
  description: 'Every error answer: a Portuguese message, never a stack trace.',
  required: ['erro'],
  properties: { erro: { type: 'string' } },
} as const;

const erroRef = { $ref: 'Erro#' } as const;

/** Error responses by status, with the condition that produces each one. */
export function errorResponses(statuses: Record<number, string>): Record<number, object> {
  return Object.fromEntries(Object.entries(statuses).map(([status, description]) => [status, { description, ...erroRef }]));
}

export const authErrors = {
  401: 'Header x-api-key ausente ou inválido: `Credencial inválida (header x-api-key).`',
  403: 'Com a entrada de servidores (OIDC), sessão sem a permissão da rota (`Permissão insuficiente.`) ou POST sem o x-csrf-token da sessão (`Token CSRF inválido.`).',
  503: 'Chave não configurada (`API não configurada (defina a env API_KEY).`), fila indisponível ou serviço sobrecarregado.',
} as const;

export const apiKeySecurity = [{ apiKey: [] }];
