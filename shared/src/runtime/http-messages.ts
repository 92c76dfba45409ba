// Fixed HTTP answers that are not errors of the domain, shared by the API and the worker's health
// server so both say the same words.
/** Fixed answers that are not errors of the domain (routing, unexpected failures, vanished clients). */
export const httpMessages = {
  notFound: 'Rota não encontrada.',
  badUrl: 'URL malformada.',
  internal: 'Erro interno do servidor.',
  clientGone: 'A conexão foi encerrada pelo cliente.',
} as const;
