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

/** 400: the request or one of its files cannot be used (SPEC §5). */
export class BadInputError extends CensoError {
  readonly status = 400;
  readonly code = 'BAD_INPUT';
}

/** 401: missing or wrong `x-api-key` (SPEC §4). */
export class InvalidCredentialError extends CensoError {
  readonly status = 401;
  readonly code = 'INVALID_CREDENTIAL';
  constructor() {
    super('Credencial inválida (header x-api-key).');
  }
}

/** 503: no API key configured; the service fails closed (SPEC §4). */
export class ApiNotConfiguredError extends CensoError {
  readonly status = 503;
  readonly code = 'API_NOT_CONFIGURED';
  constructor() {
    super('API não configurada (defina a env API_KEY).');
  }
}

/** 413: an uploaded file is over the 25 MB limit (SPEC §5). */
export class FileTooLargeError extends CensoError {
  readonly status = 413;
  readonly code = 'FILE_TOO_LARGE';
  constructor() {
    super('Arquivo excede o limite de 25 MB.');
  }
}

/** 408: the upload body did not arrive within UPLOAD_TIMEOUT_MS, or stalled for 30 s (SPEC §5). */
export class UploadTimeoutError extends CensoError {
  readonly status = 408;
  readonly code = 'UPLOAD_TIMEOUT';
  constructor() {
    super('Tempo esgotado ao receber o arquivo.');
  }
}

/** 422: the census text file is not the one the return was issued for (SPEC §3.2). */
export class TxtMismatchError extends CensoError {
  readonly status = 422;
  readonly code = 'TXT_MISMATCH';
  constructor(readonly where: { linha: string } | { codigo: string }) {
    super(
      'linha' in where
        ? `O arquivo txt não corresponde ao retorno (linha ${where.linha}).`
        : `O arquivo txt não corresponde ao retorno (código ${where.codigo}).`,
    );
  }
}

/** 503: the job queue (Redis) cannot be reached (SPEC §5). */
export class QueueUnavailableError extends CensoError {
  readonly status = 503;
  readonly code = 'QUEUE_UNAVAILABLE';
  constructor(options?: ErrorOptions) {
    super('Fila de processamento indisponível.', options);
  }
}

/** 504: the job did not finish within JOB_TIMEOUT_MS (SPEC §5). */
export class JobTimeoutError extends CensoError {
  readonly status = 504;
  readonly code = 'JOB_TIMEOUT';
  constructor() {
    super('Tempo esgotado ao processar o arquivo.');
  }
}

/** 503: the server cannot take more work right now (load shedding); retry later. */
export class OverloadedError extends CensoError {
  readonly status = 503;
  readonly code = 'OVERLOADED';
  constructor() {
    super('Serviço sobrecarregado, tente novamente em instantes.');
  }
}

/** 503: the upload folder cannot be written (disk full, permissions). */
export class StorageUnavailableError extends CensoError {
  readonly status = 503;
  readonly code = 'STORAGE_UNAVAILABLE';
  constructor(options?: ErrorOptions) {
    super('Armazenamento temporário indisponível.', options);
  }
}

/** 429: too many requests for one API key within a minute. */
export class RateLimitedError extends CensoError {
  readonly status = 429;
  readonly code = 'RATE_LIMITED';
  constructor() {
    super('Limite de requisições excedido, tente novamente em instantes.');
  }
}

/** 503: `DATABASE_URL` is unset, so the query route cannot run (SPEC §3.3). */
export class QueryNotConfiguredError extends CensoError {
  readonly status = 503;
  readonly code = 'QUERY_NOT_CONFIGURED';
  constructor() {
    super('Consulta não configurada (defina a env DATABASE_URL).');
  }
}

/** 503: the database cannot be reached. */
export class DatabaseUnavailableError extends CensoError {
  readonly status = 503;
  readonly code = 'DATABASE_UNAVAILABLE';
  constructor(options?: ErrorOptions) {
    super('Banco de dados indisponível.', options);
  }
}

/** 504: the query ran longer than QUERY_TIMEOUT_MS. */
export class QueryTimeoutError extends CensoError {
  readonly status = 504;
  readonly code = 'QUERY_TIMEOUT';
  constructor() {
    super('Tempo esgotado ao executar a consulta.');
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
  wrongExtension: (field: 'retorno' | 'txt') =>
    new BadInputError(
      field === 'retorno' ? 'Extensão inválida para retorno: envie .json ou .xlsx.' : 'Extensão inválida para txt: envie .txt.',
    ),
  outOfMemory: () => new BadInputError('Arquivo ilegível: o processamento excedeu o limite de memória.'),
  malformedMultipart: () => new BadInputError('Requisição multipart malformada.'),
  unreadableRetorno: (why: string) => new BadInputError(`Arquivo retorno ilegível: ${why}`),
} as const;

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
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
