// OpenAPI descriptions of the upload routes. The multipart body is read by hand (streamed to
// disk), so it is described here for the docs only, never validated by Fastify.
import { apiKeySecurity, authErrors, errorResponses } from './schemas.js';
import { ASYNC_422, ASYNC_503, asyncUpload } from './tarefas/schemas.js';

const uploadErrors = errorResponses({
  400: 'Arquivo ausente, extensão inválida, arquivo ilegível, campo inesperado ou requisição que não é multipart/form-data.',
  ...authErrors,
  413: 'Arquivo acima de 25 MB: `Arquivo excede o limite de 25 MB.`',
  429: 'Limite de requisições por minuto da chave excedido.',
  503: `${authErrors[503]}${ASYNC_503}`,
  504: 'O processamento passou de JOB_TIMEOUT_MS: `Tempo esgotado ao processar o arquivo.`',
  422: ASYNC_422.trim(),
});

/** SPEC §3.5: the list routes answer JSON, CSV or XLSX. */
const formatQuery = {
  type: 'object',
  properties: {
    format: {
      type: 'string',
      enum: ['json', 'csv', 'xlsx'],
      default: 'json',
      description: 'json (padrão), csv (RFC 4180, UTF-8) ou xlsx (uma planilha, cabeçalho em negrito e fixo, toda célula como texto).',
    },
  },
} as const;

const spreadsheets = (name: string) => ({
  'text/csv': { schema: { type: 'string', description: `${name}.csv: uma linha por item, colunas na ordem das chaves JSON.` } },
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': {
    schema: { type: 'string', format: 'binary', description: `${name}.xlsx: planilha "${name}".` },
  },
});

const divergencia = {
  type: 'object',
  required: ['codigo_na_escola', 'linha', 'campo', 'enviado', 'correto', 'is_filiacao', 'chave'],
  properties: {
    codigo_na_escola: { type: 'string', examples: ['ALU0001'] },
    linha: { type: 'string', description: 'Célula `linha` do retorno ("" sem essa coluna).' },
    campo: { type: 'string', description: 'Rótulo do campo como escrito no retorno.' },
    enviado: { type: 'string' },
    correto: { type: 'string' },
    is_filiacao: { type: 'boolean' },
    chave: {
      type: ['string', 'null'],
      enum: ['cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae', 'nome_pai', null],
    },
    correcao: {
      type: 'string',
      enum: ['arquivo', 'educacenso', 'formulario', 'receita', 'grafia'],
      description: 'Como se corrige (SPEC §11; docs/reimportacao.md).',
    },
  },
} as const;

const pessoa = {
  type: 'object',
  required: ['codigo_na_escola', 'linha', 'cpf', 'nome', 'data_nascimento', 'inep', 'nome_mae'],
  properties: {
    codigo_na_escola: { type: 'string', description: 'Campo 3 do registro 30 no txt.' },
    linha: { type: 'string', description: 'Número da linha do registro 30 no txt.' },
    cpf: { type: 'string' },
    nome: { type: 'string' },
    data_nascimento: { type: 'string', description: 'Sempre DD/MM/YYYY quando reconhecida.' },
    inep: { type: 'string' },
    nome_mae: { type: 'string', description: 'Campo 9 do txt, como a escola o enviou.' },
    arquivo_cpf: { type: 'string', description: 'O campo 5 como o arquivo corrigido o escreve.' },
    arquivo_nome: { type: 'string', description: 'O campo 6 como o arquivo corrigido o escreve.' },
    arquivo_data_nascimento: { type: 'string', description: 'O campo 7 como o arquivo corrigido o escreve.' },
    arquivo_inep: { type: 'string', description: 'O campo 4 como o arquivo corrigido o escreve.' },
    arquivo_nome_mae: { type: 'string', description: 'A filiação 1 (campo 9) como o arquivo corrigido a escreve.' },
    nao_aplicadas: {
      type: 'string',
      description: 'As divergências da pessoa que o arquivo corrigido não escreve, `<campo>: <motivo>` cada, separadas por `; `.',
    },
    regra_25: {
      type: 'boolean',
      description: 'O arquivo corrige a pessoa embora o INEP possa recusá-la por descaracterização (regra 25).',
    },
  },
} as const;

export const divergenciasSchema = {
  tags: ['retorno'],
  headers: asyncUpload.headers,
  summary: 'Divergências com a Receita Federal listadas no retorno do Censo',
  description: 'multipart/form-data com um arquivo `retorno` (.json ou .xlsx). Responde as divergências na ordem das linhas do retorno.',
  consumes: ['multipart/form-data'],
  security: apiKeySecurity,
  querystring: formatQuery,
  response: {
    200: {
      description: 'Divergências encontradas.',
      content: {
        'application/json': {
          schema: { type: 'object', required: ['divergencias'], properties: { divergencias: { type: 'array', items: divergencia } } },
        },
        ...spreadsheets('divergencias'),
      },
    },
    ...uploadErrors,
    ...asyncUpload.responses,
  },
} as const;

export const retornoRfSchema = {
  tags: ['retorno'],
  headers: asyncUpload.headers,
  summary: 'Pessoas do arquivo de migração corrigidas pelas divergências da Receita Federal',
  description:
    'multipart/form-data com `retorno` (.json ou .xlsx) e `txt` (.txt, arquivo de migração enviado). Responde uma pessoa por registro 30 com divergência, na ordem das linhas do txt.',
  consumes: ['multipart/form-data'],
  security: apiKeySecurity,
  querystring: formatQuery,
  response: {
    200: {
      description: 'Pessoas corrigidas.',
      content: {
        'application/json': {
          schema: { type: 'object', required: ['pessoas'], properties: { pessoas: { type: 'array', items: pessoa } } },
        },
        ...spreadsheets('pessoas'),
      },
    },
    ...uploadErrors,
    ...asyncUpload.responses,
    ...errorResponses({
      422: `O txt não é o arquivo do retorno: \`O arquivo txt não corresponde ao retorno (linha <n>).\` ou \`(código <c>)\`.${ASYNC_422}`,
    }),
  },
} as const;

export const censoCorrigidoSchema = {
  tags: ['retorno'],
  headers: asyncUpload.headers,
  summary: 'Arquivo de migração corrigido, pronto para reenviar ao Educacenso',
  description:
    'multipart/form-data com `retorno` (.json ou .xlsx) e `txt` (.txt, arquivo de migração enviado). Responde o próprio txt, em ISO-8859-1, ' +
    'com os campos 4 a 7 (INEP, CPF, nome, data de nascimento) das pessoas de /api/retorno-rf trocados pelos valores da Receita Federal, ' +
    'no formato do leiaute do INEP; todo o resto byte a byte igual. Salve com `curl -OJ`.',
  consumes: ['multipart/form-data'],
  security: apiKeySecurity,
  response: {
    200: {
      description: 'O arquivo corrigido (`Content-Disposition: attachment`).',
      headers: {
        'censo-pessoas-corrigidas': { type: 'integer', description: 'Linhas de registro 30 cujos bytes mudaram.' },
        'censo-correcoes-nao-aplicadas': {
          type: 'integer',
          description:
            'Divergências das pessoas que o arquivo corrigido não escreve, fora as só de grafia: valores que o leiaute ou as regras do INEP recusam e campos que o arquivo não altera (SPEC §11).',
        },
        'censo-pessoas-regra-25': {
          type: 'integer',
          description:
            'Pessoas que o arquivo corrige embora o INEP possa recusá-las por descaracterização (regra 25): confirme-as no formulário do Educacenso.',
        },
      },
      content: { 'text/plain': { schema: { type: 'string', format: 'binary' } } },
    },
    ...uploadErrors,
    ...asyncUpload.responses,
    ...errorResponses({
      422: `O txt não é o arquivo do retorno: \`O arquivo txt não corresponde ao retorno (linha <n>).\` ou \`(código <c>)\`.${ASYNC_422}`,
    }),
  },
} as const;
