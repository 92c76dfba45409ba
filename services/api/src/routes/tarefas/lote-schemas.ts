// OpenAPI descriptions (and response serialisation) of the batches' routes (SPEC §7.3, §10): create,
// read, close, list, export, summarise, compare and delete a batch. The monitors and the pieces every
// asynchronous route shares are in schemas.ts.
import { apiKeySecurity, authErrors, errorResponses } from '../schemas.js';
import { asyncHeaders, idParam, loteRef, loteSchema, pageOf, pageParams, readErrors, retryAfter, tarefaRef } from './schemas.js';

const loteNotFound = errorResponses({ 404: 'Id desconhecido, apagado ou expirado: `Lote não encontrado.`' });

export const loteCreateSchema = {
  tags: ['lotes'],
  summary: 'Cria um lote para enviar muitos arquivos',
  description:
    'Corpo JSON com `nome` e `webhook` opcionais. O webhook deve ser https para endereço público (ou http/privado com WEBHOOK_ALLOW_PRIVATE=true); ' +
    'a resposta de criação, e só ela, traz `webhook_segredo` para verificar as assinaturas (Standard Webhooks).',
  security: apiKeySecurity,
  headers: { type: 'object', properties: { 'idempotency-key': asyncHeaders.properties['idempotency-key'] } },
  body: {
    type: ['object', 'null'],
    properties: {
      nome: { type: ['string', 'null'], maxLength: 200 },
      webhook: { type: ['string', 'null'], format: 'uri', description: 'URL chamada quando o lote termina (concluido ou cancelado).' },
    },
  },
  response: {
    201: {
      description: 'Criado; `Location` leva ao monitor.',
      headers: { location: { type: 'string' }, 'idempotent-replayed': { type: 'string' } },
      type: 'object',
      required: [...loteSchema.required],
      properties: {
        ...loteSchema.properties,
        webhook_segredo: { type: 'string', description: '`whsec_` + base64 de 32 bytes aleatórios.' },
      },
    },
    ...errorResponses({
      400: 'Corpo que não é um objeto JSON, `nome` longo demais, ou `Webhook inválido: <motivo>.`',
      422: '`Idempotency-Key já usada com outra requisição.`',
      429: 'MAX_LOTES_ABERTOS lotes abertos deste principal: `Muitos lotes abertos.`',
    }),
    ...readErrors,
  },
} as const;

export const loteGetSchema = {
  tags: ['lotes'],
  summary: 'O monitor de um lote, com as contagens por estado',
  security: apiKeySecurity,
  params: idParam,
  response: {
    200: { description: 'O lote; `Retry-After` até concluido.', headers: retryAfter, ...loteRef },
    ...loteNotFound,
    ...readErrors,
  },
} as const;

export const loteFecharSchema = {
  tags: ['lotes'],
  summary: 'Fecha o lote: nenhum arquivo a mais; ele termina quando suas tarefas terminarem',
  security: apiKeySecurity,
  params: idParam,
  response: { 200: { description: 'O lote fechado.', headers: retryAfter, ...loteRef }, ...loteNotFound, ...readErrors },
} as const;

export const loteTarefasSchema = {
  tags: ['lotes'],
  summary: 'As tarefas do lote, em ordem de criação, página por página',
  security: apiKeySecurity,
  params: idParam,
  querystring: {
    type: 'object',
    properties: {
      estado: { type: 'string', enum: ['aguardando', 'processando', 'concluida', 'falhou', 'cancelada'] },
      ...pageParams,
    },
  },
  response: {
    200: pageOf('tarefas', tarefaRef),
    ...errorResponses({ 400: 'estado, cursor ou limit inválido.' }),
    ...loteNotFound,
    ...readErrors,
  },
} as const;

const loteHeaders = {
  'lote-tarefas-concluidas': { type: 'integer', description: 'Tarefas divergencias-rf concluídas do lote.' },
  'lote-tarefas-falhas': { type: 'integer', description: 'Tarefas divergencias-rf do lote que falharam.' },
  'lote-estado': { type: 'string', description: 'Com `parcial=true`: o estado do lote quando a resposta começou.' },
} as const;

const parcialQuery = {
  format: { type: 'string', enum: ['json', 'csv', 'xlsx'], default: 'json' },
  parcial: {
    type: 'string',
    enum: ['true', 'false'],
    default: 'false',
    description: '`true`: responde antes de o lote estar concluido, com o que já terminou (e `Lote-Estado`).',
  },
} as const;

/** A batch export's answer in its three formats: `json` as described, csv and xlsx as downloads. */
function exportContent(json: object) {
  return {
    'application/json': json,
    'text/csv': { schema: { type: 'string' } },
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { schema: { type: 'string', format: 'binary' } },
  } as const;
}

const notConcluded = '`Lote ainda não concluído.` (com Retry-After), antes de o lote estar concluido e sem `parcial=true`.';

export const loteDivergenciasSchema = {
  tags: ['lotes'],
  summary: 'Todas as divergências das tarefas divergencias-rf concluídas do lote, e os arquivos que falharam',
  description:
    'Em ordem de criação das tarefas, cada item com `referencia` e `arquivo` (o nome do arquivo enviado) antes dos campos de /api/divergencias-rf. ' +
    'Nunca parcial sem dizer: 409 até o lote estar concluido, a menos que `parcial=true`. Os arquivos que falharam vêm em `falhas` (json) ' +
    'ou na planilha `Falhas` (xlsx); o csv traz só as divergências (veja /falhas). ' +
    'Transmitido aos poucos, com memória limitada; um xlsx que passaria de 1.048.575 linhas continua em outras planilhas.',
  security: apiKeySecurity,
  params: idParam,
  querystring: { type: 'object', properties: parcialQuery },
  response: {
    200: {
      description: 'As divergências e as falhas.',
      headers: loteHeaders,
      content: exportContent({
        schema: {
          type: 'object',
          description: '{"divergencias": [{"referencia", "arquivo", ...}], "falhas": [{"referencia", "arquivo", "status", "erro"}]}',
        },
      }),
    },
    ...errorResponses({ 400: '`Parâmetro format deve ser json, csv ou xlsx.` ou `parcial` inválido.', 409: notConcluded }),
    ...loteNotFound,
    ...readErrors,
  },
} as const;

export const loteFalhasSchema = {
  tags: ['lotes'],
  summary: 'Os arquivos do lote que falharam (tarefas divergencias-rf), com o status e o erro de cada um',
  security: apiKeySecurity,
  params: idParam,
  querystring: { type: 'object', properties: parcialQuery },
  response: {
    200: {
      description: 'As falhas.',
      headers: loteHeaders,
      content: exportContent({ schema: { type: 'object', description: '{"falhas": [{"referencia", "arquivo", "status", "erro"}]}' } }),
    },
    ...errorResponses({ 400: '`Parâmetro format deve ser json, csv ou xlsx.` ou `parcial` inválido.', 409: notConcluded }),
    ...loteNotFound,
    ...readErrors,
  },
} as const;

const contagemResumo = {
  type: 'object',
  properties: Object.fromEntries(
    ['arquivos', 'falhas', 'divergencias', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai', 'outro'].map((name) => [
      name,
      { type: 'integer' },
    ]),
  ),
} as const;

export const loteResumoSchema = {
  tags: ['lotes'],
  summary: 'O resumo do lote: por escola (referencia), arquivos, falhas e divergências por tipo, e o total',
  description:
    'Uma linha por `referencia`, na ordem dos arquivos: `arquivos`, `falhas`, `divergencias` e uma contagem por `chave` ' +
    '(`cpf`, `nome`, `data_nascimento`, `inep`, `nome_mae`, `nome_pai`, `outro` para as sem chave). json: `{"resumo": [...], "total": {...}}`; ' +
    'csv e xlsx: as linhas e, por último, a linha `Total`. 409 até o lote estar concluido, a menos que `parcial=true` (SPEC §10).',
  security: apiKeySecurity,
  params: idParam,
  querystring: { type: 'object', properties: parcialQuery },
  response: {
    200: {
      description: 'O resumo.',
      headers: loteHeaders,
      content: exportContent({
        schema: {
          type: 'object',
          properties: {
            resumo: {
              type: 'array',
              items: { ...contagemResumo, properties: { referencia: { type: 'string' }, ...contagemResumo.properties } },
            },
            total: contagemResumo,
          },
        },
      }),
    },
    ...errorResponses({ 400: '`Parâmetro format deve ser json, csv ou xlsx.` ou `parcial` inválido.', 409: notConcluded }),
    ...loteNotFound,
    ...readErrors,
  },
} as const;

export const loteComparacaoSchema = {
  tags: ['lotes'],
  summary: 'Compara o lote com a rodada anterior: cada divergência resolvida, persistente ou nova, por escola',
  description:
    'Chave de cada divergência: (`referencia`, `codigo_na_escola`, `chave` — ou `campo` quando não há chave). `resolvida`: só na rodada anterior; ' +
    '`persistente`: nas duas (valores da atual); `nova`: só na atual. Uma escola é a mesma nas duas rodadas pelo código INEP que os dois ' +
    'retornos trazem (o `escola` do JSON, ou `codigo da escola`/`co_entidade`, com 8 dígitos; o título da planilha), senão pela `referencia` ' +
    '(dois arquivos com códigos diferentes nunca), senão pela pasta (a parte antes do último `/`) quando a pasta tem uma só escola em cada ' +
    'rodada (arquivo renomeado); pareada pelo código ou pela pasta, o `resumo` traz `referencia_anterior`. Uma escola lida em só uma rodada vai para `referencias_sem_par` (`referencia`, `rodada`, `motivo` ' +
    '`sem_arquivo` ou `falhou`, e o `erro` da falha) e não é julgada. Os dois lotes devem ser de quem pergunta e estar concluidos. ' +
    'json: `{"comparacao", "resumo", "total", "referencias_sem_par"}`; csv: as linhas; xlsx: as linhas, a planilha `resumo` com as ' +
    'contagens por escola e o total (números) e a planilha `sem par` (SPEC §10). No máximo 400000 divergências nas duas rodadas juntas ' +
    '(422), e no máximo isso em comparações ao mesmo tempo por processo (503 com Retry-After).',
  security: apiKeySecurity,
  params: idParam,
  querystring: {
    type: 'object',
    required: ['anterior'],
    properties: { anterior: { type: 'string', description: 'O id do lote da rodada anterior.' }, format: parcialQuery.format },
  },
  response: {
    200: {
      description: 'A comparação.',
      content: exportContent({
        schema: { type: 'object', description: '{"comparacao": [...], "resumo": [...], "total": {...}, "referencias_sem_par": [...]}' },
      }),
    },
    ...errorResponses({
      400: '`Parâmetro format deve ser json, csv ou xlsx.` ou `anterior` ausente ou igual ao próprio lote.',
      409: '`Lote ainda não concluído.` (com Retry-After), para qualquer dos dois lotes.',
      422: '`Comparação grande demais: …` (mais de 400000 divergências nas duas rodadas).',
    }),
    ...loteNotFound,
    ...readErrors,
    ...errorResponses({
      503: `${authErrors[503]} Ou \`Comparações demais em andamento, tente novamente em instantes.\` (com Retry-After).`,
    }),
  },
} as const;

export const lotesListSchema = {
  tags: ['lotes'],
  summary: 'Os lotes de quem pergunta, do mais novo ao mais antigo, página por página',
  description: 'Só os lotes criados pela mesma integração (chave) ou pela mesma pessoa: quem perdeu o id de um lote o acha aqui.',
  security: apiKeySecurity,
  querystring: { type: 'object', properties: pageParams },
  response: {
    200: pageOf('lotes', loteRef),
    ...errorResponses({ 400: 'cursor ou limit inválido.' }),
    ...readErrors,
  },
} as const;

export const loteDeleteSchema = {
  tags: ['lotes'],
  summary: 'Apaga o lote: cancela as tarefas por terminar e apaga todos os dados',
  security: apiKeySecurity,
  params: idParam,
  response: { 204: { description: 'Apagado.', type: 'null' }, ...loteNotFound, ...readErrors },
} as const;
