// OpenAPI descriptions (and response serialisation) of asynchronous intake (SPEC §7): the task and
// batch monitors, their routes, and the headers the upload routes take and answer with.
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

const tarefaRef = { $ref: 'Tarefa#' } as const;
const loteRef = { $ref: 'Lote#' } as const;
const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } as const;

/** The keyset listings' parameters (SPEC §7.3). */
const pageParams = {
  cursor: { type: 'string', description: '`next_cursor` da página anterior.' },
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
} as const;

/** One page of a keyset listing: its items under `key`, and where the next page starts. */
function pageOf(key: string, items: object) {
  return {
    description: 'Uma página; `next_cursor` é null na última.',
    type: 'object',
    required: [key, 'next_cursor'],
    properties: { [key]: { type: 'array', items }, next_cursor: { type: ['string', 'null'] } },
  } as const;
}

const retryAfter = { 'retry-after': { type: 'integer', description: 'Segundos até valer a pena perguntar de novo.' } } as const;

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

const asyncHeaders = {
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

const readErrors = errorResponses({ ...authErrors });

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
    '`persistente`: nas duas (valores da atual); `nova`: só na atual. Uma escola é a mesma nas duas rodadas pela `referencia`; sem a mesma ' +
    '`referencia`, pela pasta (a parte antes do último `/`) quando a pasta tem uma só escola em cada rodada (arquivo renomeado; o `resumo` ' +
    'traz então `referencia_anterior`). Uma escola lida em só uma rodada vai para `referencias_sem_par` (`referencia`, `rodada`, `motivo` ' +
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
