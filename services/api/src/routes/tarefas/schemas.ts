// OpenAPI descriptions (and response serialisation) of asynchronous intake (SPEC §7): the task and
// batch monitors, the tasks' routes, and the headers the upload routes take and answer with. The
// batches' own routes are described in lote-schemas.ts, with the pieces exported here.
import { apiKeySecurity, authErrors, errorResponses } from '../schemas.js';

const rfc3339 = (description: string) => ({ type: ['string', 'null'], format: 'date-time', description }) as const;

export const tarefaSchema = {
  $id: 'Tarefa',
  type: 'object',
  description: 'O monitor de uma tarefa assíncrona (SPEC §7.1).',
  required: [
    'id',
    'rota',
    'formato',
    'estado',
    'criada_em',
    'iniciada_em',
    'concluida_em',
    'expira_em',
    'resultado',
    'erro',
    'referencia',
    'lote',
    'arquivos',
  ],
  properties: {
    id: {
      type: 'string',
      description:
        'Opaco, seguro em URL, com 122 bits aleatórios. Só quem criou a tarefa (a integração ou a pessoa) a vê; para outro, 404.',
    },
    rota: { type: 'string', enum: ['divergencias-rf', 'retorno-rf', 'censo-corrigido'] },
    formato: { type: 'string', enum: ['json', 'csv', 'xlsx', 'txt'] },
    estado: { type: 'string', enum: ['aguardando', 'processando', 'concluida', 'falhou', 'cancelada'] },
    criada_em: { type: 'string', format: 'date-time', description: 'RFC 3339, UTC.' },
    iniciada_em: rfc3339('Quando o processamento começou; null antes.'),
    concluida_em: rfc3339('Quando terminou (concluída, falhou ou cancelada); null antes.'),
    expira_em: rfc3339(
      'Quando a tarefa e o resultado serão apagados: RESULT_TTL_HOURS depois de concluida_em (a de um lote vive o quanto o lote viver); null antes.',
    ),
    resultado: { type: ['string', 'null'], description: '`/api/tarefas/{id}/resultado` quando concluída; senão null.' },
    erro: {
      type: ['object', 'null'],
      description: 'Quando falhou: o status e a mensagem que a rota síncrona teria respondido; senão null.',
      required: ['status', 'erro'],
      properties: { status: { type: 'integer' }, erro: { type: 'string' } },
    },
    referencia: { type: ['string', 'null'], description: 'O campo `referencia` enviado ao lote; senão null.' },
    lote: { type: ['string', 'null'], description: 'O lote da tarefa; senão null.' },
    arquivos: {
      type: 'array',
      description: 'Os arquivos enviados (sem dado pessoal): quem retoma um envio confere se a tarefa tem o arquivo que pretende.',
      items: {
        type: 'object',
        required: ['campo', 'nome', 'bytes', 'sha256'],
        properties: {
          campo: { type: 'string', enum: ['retorno', 'txt'] },
          nome: { type: 'string', description: 'O nome do arquivo como o cliente o enviou.' },
          bytes: { type: 'integer' },
          sha256: { type: 'string', description: 'SHA-256 do arquivo, em hexadecimal.' },
        },
      },
    },
  },
} as const;

const contagens = {
  type: 'object',
  required: ['total', 'aguardando', 'processando', 'concluida', 'falhou', 'cancelada'],
  properties: Object.fromEntries(
    ['total', 'aguardando', 'processando', 'concluida', 'falhou', 'cancelada'].map((name) => [name, { type: 'integer' }]),
  ),
} as const;

export const loteSchema = {
  $id: 'Lote',
  type: 'object',
  description: 'O monitor de um lote (SPEC §7.3).',
  required: ['id', 'nome', 'estado', 'criado_em', 'fechado_em', 'concluido_em', 'expira_em', 'tarefas'],
  properties: {
    id: { type: 'string' },
    nome: { type: ['string', 'null'] },
    estado: {
      type: 'string',
      enum: ['aberto', 'processando', 'concluido', 'cancelado'],
      description: 'aberto: recebe arquivos; processando: fechado, com tarefas por terminar; concluido: todas terminaram.',
    },
    criado_em: { type: 'string', format: 'date-time' },
    fechado_em: rfc3339('Quando foi fechado (`fechar`, ou 24 h sem novo arquivo); null antes.'),
    concluido_em: rfc3339('Quando todas as tarefas do lote fechado terminaram; null antes.'),
    expira_em: rfc3339('RESULT_TTL_HOURS depois de concluido_em: o lote, as tarefas e os resultados são apagados.'),
    tarefas: contagens,
  },
} as const;

export const tarefaRef = { $ref: 'Tarefa#' } as const;
export const loteRef = { $ref: 'Lote#' } as const;
export const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;

/** The keyset listings' parameters (SPEC §7.3). */
export const pageParams = {
  cursor: { type: 'string', description: '`next_cursor` da página anterior.' },
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
} as const;

/** One page of a keyset listing: its items under `key`, and where the next page starts. */
export function pageOf(key: string, items: object) {
  return {
    description: 'Uma página; `next_cursor` é null na última.',
    type: 'object',
    required: [key, 'next_cursor'],
    properties: { [key]: { type: 'array', items }, next_cursor: { type: ['string', 'null'] } },
  } as const;
}

export const retryAfter = { 'retry-after': { type: 'integer', description: 'Segundos até valer a pena perguntar de novo.' } } as const;

const accepted = {
  description:
    'Arquivo recebido; o processamento segue depois. O corpo é o monitor; `Location` leva a ele. ' +
    'Com Idempotency-Key já usada na mesma requisição: a mesma tarefa, com `Idempotent-Replayed: true`.',
  headers: {
    location: { type: 'string', description: '/api/tarefas/{id}' },
    'preference-applied': { type: 'string', description: '`respond-async`, quando pedido em Prefer.' },
    ...retryAfter,
    'idempotent-replayed': { type: 'string', description: '`true` numa repetição com a mesma Idempotency-Key.' },
  },
  ...tarefaRef,
} as const;

const asyncErrors = errorResponses({
  409: 'Com `Prefer: respond-async`: a mesma Idempotency-Key numa requisição ainda sendo recebida: `Requisição com esta Idempotency-Key em andamento.` (com Retry-After).',
});

/** Added to a status the synchronous route documents already. */
export const ASYNC_422 = ' Com `Prefer: respond-async`: `Idempotency-Key já usada com outra requisição.`';
export const ASYNC_503 =
  ' Com `Prefer: respond-async`: mais de MAX_QUEUED_TAREFAS tarefas aguardando (`Serviço sobrecarregado, tente novamente em instantes.`, com Retry-After).';

export const asyncHeaders = {
  type: 'object',
  properties: {
    prefer: { type: 'string', description: '`respond-async`: responde 202 com uma tarefa em vez de esperar o processamento (SPEC §7.1).' },
    'idempotency-key': {
      type: 'string',
      description:
        'Opcional, 1 a 255 caracteres ASCII imprimíveis, lembrada por 24 h: repetir a mesma requisição devolve a mesma tarefa (SPEC §7.2).',
    },
  },
} as const;

/** What the three upload routes take and answer besides their synchronous answer (SPEC §7.1, §7.2). */
export const asyncUpload = { headers: asyncHeaders, responses: { 202: accepted, ...asyncErrors } } as const;

const uploadErrors = errorResponses({
  400: 'Arquivo ausente, extensão inválida, campo inesperado, `referencia` longa demais, Idempotency-Key inválida ou requisição que não é multipart/form-data.',
  ...authErrors,
  404: 'Lote inexistente ou expirado: `Lote não encontrado.`',
  409: '`Lote fechado.`, ou `Requisição com esta Idempotency-Key em andamento.` (com Retry-After).',
  413: 'Arquivo acima de 25 MB: `Arquivo excede o limite de 25 MB.`',
  422: '`Idempotency-Key já usada com outra requisição.`',
  429: 'Limite de requisições por minuto da chave excedido.',
});

const formatQuery = {
  type: 'object',
  properties: {
    format: { type: 'string', enum: ['json', 'csv', 'xlsx'], description: 'Formato do resultado (não se aplica a censo-corrigido).' },
  },
} as const;

/** A batch's divergencias-rf upload: one return's monitor, or several returns' monitors in the order sent. */
const acceptedOneOrMany = {
  description:
    accepted.description +
    ' Com vários arquivos `retorno` (até 100 por requisição; o i-ésimo campo `referencia` vai com o i-ésimo arquivo): ' +
    '`{"tarefas": [monitores]}` na ordem dos arquivos, sem `Location`; a Idempotency-Key cobre a requisição inteira.',
  headers: accepted.headers,
  anyOf: [tarefaRef, { type: 'object', required: ['tarefas'], properties: { tarefas: { type: 'array', items: tarefaRef } } }],
} as const;

export function loteUploadSchema(rota: string) {
  const several = rota === 'divergencias-rf';
  return {
    tags: ['lotes'],
    summary: `Envia um arquivo ao lote (como POST /api/${rota}, respondido depois)`,
    description:
      `multipart/form-data com os campos de /api/${rota} e um campo de texto opcional \`referencia\` (até 255 caracteres, ex.: o código INEP da escola). ` +
      'Responde 202 com a tarefa, que leva `lote` e `referencia`.' +
      (several
        ? ' Uma requisição pode levar vários arquivos `retorno` (até 100), cada um com o seu `referencia` na mesma ordem: uma tarefa por arquivo, todas criadas ou nenhuma.'
        : ''),
    consumes: ['multipart/form-data'],
    security: apiKeySecurity,
    params: idParam,
    headers: { type: 'object', properties: { 'idempotency-key': asyncHeaders.properties['idempotency-key'] } },
    ...(rota === 'censo-corrigido' ? {} : { querystring: formatQuery }),
    response: { 202: several ? acceptedOneOrMany : accepted, ...uploadErrors },
  };
}

export const readErrors = errorResponses({ ...authErrors });

export const tarefaGetSchema = {
  tags: ['tarefas'],
  summary: 'O monitor de uma tarefa',
  security: apiKeySecurity,
  params: idParam,
  response: {
    200: { description: 'A tarefa; `Retry-After` enquanto não terminou.', headers: retryAfter, ...tarefaRef },
    ...errorResponses({ 404: 'Id desconhecido, apagado ou expirado: `Tarefa não encontrada.`' }),
    ...readErrors,
  },
} as const;

export const tarefaResultadoSchema = {
  tags: ['tarefas'],
  summary: 'O resultado de uma tarefa: exatamente a resposta da rota síncrona',
  description:
    'Concluída: os mesmos bytes, tipo e cabeçalhos (Content-Disposition, Censo-Pessoas-Corrigidas…) que a rota síncrona responderia. ' +
    'Com `?format=` numa tarefa de divergencias-rf ou retorno-rf: os mesmos itens em outro formato, convertidos do resultado guardado, sem novo processamento. ' +
    'Falhou: o status e o `{"erro"}` da rota síncrona.',
  security: apiKeySecurity,
  params: idParam,
  querystring: formatQuery,
  response: {
    200: {
      description: 'O resultado.',
      content: {
        'application/json': { schema: { type: 'object', description: '{"divergencias": [...]} ou {"pessoas": [...]}' } },
        'text/csv': { schema: { type: 'string' } },
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { schema: { type: 'string', format: 'binary' } },
        'text/plain': { schema: { type: 'string', format: 'binary', description: 'O censo corrigido (ISO-8859-1).' } },
      },
    },
    ...errorResponses({
      400: 'O arquivo que a tarefa processou é ilegível (o erro da rota síncrona), ou `format` inválido.',
      404: '`Tarefa não encontrada.`',
      409: '`Tarefa ainda não concluída.` (com Retry-After) ou `Tarefa cancelada.`',
      422: 'O txt não corresponde ao retorno (o erro da rota síncrona).',
    }),
    ...readErrors,
  },
} as const;

export const tarefaDeleteSchema = {
  tags: ['tarefas'],
  summary: 'Cancela e apaga uma tarefa agora',
  description: 'Um job aguardando é removido, um em execução é parado; o upload e o resultado são apagados na hora (LGPD).',
  security: apiKeySecurity,
  params: idParam,
  response: {
    204: { description: 'Apagada.', type: 'null' },
    ...errorResponses({ 404: '`Tarefa não encontrada.`' }),
    ...readErrors,
  },
} as const;
