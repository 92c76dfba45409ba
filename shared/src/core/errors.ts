// Every error the service can answer with, in one place: HTTP status + the Portuguese message
// from SPEC.md. The API's error plugin is the only code that turns these into `{ erro }` bodies.

export abstract class CensoError extends Error {
  abstract readonly status: number;
  /** Stable machine code, used in logs and in job results that cross the queue. */
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The fixed answers, one row each: machine code, HTTP status and the Portuguese message from
 * SPEC.md (or, where SPEC fixes only the condition, the text the README's error table quotes).
 */
export const ERRORS = {
  INVALID_CREDENTIAL: { status: 401, message: 'Credencial inválida (header x-api-key).' },
  // Staff sign-in (SPEC §8).
  PERMISSION_DENIED: { status: 403, message: 'Permissão insuficiente.' },
  CSRF_INVALID: { status: 403, message: 'Token CSRF inválido.' },
  NO_SESSION: { status: 401, message: 'Nenhuma sessão ativa: entre com sua conta.' },
  SESSIONS_UNAVAILABLE: { status: 503, message: 'Sessões indisponíveis, tente novamente em instantes.' },
  API_NOT_CONFIGURED: { status: 503, message: 'API não configurada (defina a env API_KEY).' },
  FILE_TOO_LARGE: { status: 413, message: 'Arquivo excede o limite de 25 MB.' },
  UPLOAD_TIMEOUT: { status: 408, message: 'Tempo esgotado ao receber o arquivo.' },
  QUEUE_UNAVAILABLE: { status: 503, message: 'Fila de processamento indisponível.' },
  JOB_TIMEOUT: { status: 504, message: 'Tempo esgotado ao processar o arquivo.' },
  OVERLOADED: { status: 503, message: 'Serviço sobrecarregado, tente novamente em instantes.' },
  STORAGE_UNAVAILABLE: { status: 503, message: 'Armazenamento temporário indisponível.' },
  RATE_LIMITED: { status: 429, message: 'Limite de requisições excedido, tente novamente em instantes.' },
  QUERY_NOT_CONFIGURED: { status: 503, message: 'Consulta não configurada (defina a env DATABASE_URL).' },
  DATABASE_UNAVAILABLE: { status: 503, message: 'Banco de dados indisponível.' },
  QUERY_TIMEOUT: { status: 504, message: 'Tempo esgotado ao executar a consulta.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** The base class of one table row: `class X extends fixedError('CODE') {}` keeps `instanceof X`. */
function fixedError<C extends ErrorCode>(code: C) {
  return class extends CensoError {
    readonly status: (typeof ERRORS)[C]['status'] = ERRORS[code].status;
    readonly code: C = code;
    constructor(options?: ErrorOptions) {
      super(ERRORS[code].message, options);
    }
  };
}

/** 400: the request or one of its files cannot be used (SPEC §5); messages in `badInput`. */
export class BadInputError extends CensoError {
  readonly status = 400;
  readonly code = 'BAD_INPUT';
}

/** 401: missing or wrong `x-api-key` (SPEC §4). */
export class InvalidCredentialError extends fixedError('INVALID_CREDENTIAL') {}
/** 403: a staff session without the route's permission (SPEC §8). */
export class PermissionDeniedError extends fixedError('PERMISSION_DENIED') {}
/** 403: a state-changing request of a staff session without its CSRF token (SPEC §8). */
export class CsrfInvalidError extends fixedError('CSRF_INVALID') {}
/** 401: GET /auth/sessao without a live session (SPEC §8). */
export class NoSessionError extends fixedError('NO_SESSION') {}
/** 503: the session store (Redis in queue mode) cannot be reached. */
export class SessionsUnavailableError extends fixedError('SESSIONS_UNAVAILABLE') {}
/** 503: no API key configured; the service fails closed (SPEC §4). */
export class ApiNotConfiguredError extends fixedError('API_NOT_CONFIGURED') {}
/** 413: an uploaded file is over the 25 MB limit (SPEC §5). */
export class FileTooLargeError extends fixedError('FILE_TOO_LARGE') {}
/** 408: the upload body did not arrive within UPLOAD_TIMEOUT_MS, or stalled for 30 s (SPEC §5). */
export class UploadTimeoutError extends fixedError('UPLOAD_TIMEOUT') {}
/** 503: the job queue (Redis) cannot be reached (SPEC §5). */
export class QueueUnavailableError extends fixedError('QUEUE_UNAVAILABLE') {}
/** 504: the job did not finish within JOB_TIMEOUT_MS (SPEC §5). */
export class JobTimeoutError extends fixedError('JOB_TIMEOUT') {}
/** 503: the server cannot take more work right now (load shedding); retry later. */
export class OverloadedError extends fixedError('OVERLOADED') {}
/** 503: the upload folder cannot be written (disk full, permissions). */
export class StorageUnavailableError extends fixedError('STORAGE_UNAVAILABLE') {}
/** 429: too many requests for one API key within a minute. */
export class RateLimitedError extends fixedError('RATE_LIMITED') {}
/** 503: `DATABASE_URL` is unset, so the query route cannot run (SPEC §3.3). */
export class QueryNotConfiguredError extends fixedError('QUERY_NOT_CONFIGURED') {}
/** 503: the database cannot be reached. */
export class DatabaseUnavailableError extends fixedError('DATABASE_UNAVAILABLE') {}
/** 504: the query ran longer than QUERY_TIMEOUT_MS. */
export class QueryTimeoutError extends fixedError('QUERY_TIMEOUT') {}

/** What a 422 quotes of the return's own value (32,000 characters once came back whole). */
export const MAX_QUOTED_CHARS = 40;

/**
 * 422: the census text file is not the one the return was issued for (SPEC §3.2). The message
 * quotes the return's linha or código, at most MAX_QUOTED_CHARS of it; the error keeps nothing
 * else of it, so logging the error object cannot log more.
 */
export class TxtMismatchError extends CensoError {
  readonly status = 422;
  readonly code = 'TXT_MISMATCH';
  constructor(where: { linha: string } | { codigo: string }) {
    super(
      'linha' in where
        ? `O arquivo txt não corresponde ao retorno (linha ${truncate(where.linha, MAX_QUOTED_CHARS)}).`
        : `O arquivo txt não corresponde ao retorno (código ${truncate(where.codigo, MAX_QUOTED_CHARS)}).`,
    );
  }
}

/**
 * The 400 messages. SPEC.md fixes the conditions but not these texts, so they live here, once,
 * and the README's error table quotes them.
 */
export const badInput = {
  notMultipart: () => new BadInputError('A requisição deve ser multipart/form-data.'),
  fileMissing: (field: 'retorno' | 'txt') => new BadInputError(`Arquivo ausente: envie o campo ${field}.`),
  unexpectedField: (field: string) => new BadInputError(`Campo inesperado: ${truncate(field, 60)}.`),
  duplicateField: (field: string) => new BadInputError(`Campo enviado mais de uma vez: ${field}.`),
  /** Several returns in one batch request (SPEC §7.3): the i-th referencia goes with the i-th file. */
  referenciasPorArquivo: () => new BadInputError('Envie um campo referencia para cada arquivo retorno, ou nenhum.'),
  retornosDemais: (max: number) => new BadInputError(`Envie no máximo ${max} arquivos retorno por requisição.`),
  wrongExtension: (field: 'retorno' | 'txt') =>
    new BadInputError(
      field === 'retorno' ? 'Extensão inválida para retorno: envie .json ou .xlsx.' : 'Extensão inválida para txt: envie .txt.',
    ),
  outOfMemory: () => new BadInputError('Arquivo ilegível: o processamento excedeu o limite de memória.'),
  malformedMultipart: () => new BadInputError('Requisição multipart malformada.'),
  unreadableRetorno: (why: string) => new BadInputError(`Arquivo retorno ilegível: ${why}`),
  unreadableTxt: (why: string) => new BadInputError(`Arquivo txt ilegível: ${why}`),
  /** General rule 39 of INEP's layout: a migration file holds at most 100 schools (SPEC §11). */
  escolasDemais: (escolas: number, max: number) =>
    new BadInputError(
      `O arquivo txt tem ${escolas} escolas; o Educacenso aceita no máximo ${max} escolas por arquivo. Divida-o em arquivos de até ${max} escolas.`,
    ),
} as const;

/**
 * Client input echoed in a message: bounded, so a 10 kB name does not come back whole. At most
 * `max` UTF-16 units, then `…`; a cut never splits a surrogate pair.
 */
export function truncate(text: string, max = 60): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text.charAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/**
 * A job that ended with a domain failure (JobResult `ok: false`): the status and message were
 * decided by the job code, possibly in another process, and travel as plain data.
 */
export class JobRejectedError extends CensoError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
