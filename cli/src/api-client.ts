// The censo-api as `lote --servidor` and `lotes` talk to it: the base URL and key checked before
// the first request, and every refusal turned into one Portuguese line that says what to do
// (a wrong key, a service that is down, an address that is not a censo-api).
import { setTimeout as sleep } from 'node:timers/promises';
import { ERRORS } from '@censo/shared/local';
import { BadUsage, InputError, quote } from './failures.js';

/** A request the service answers busy (503, 429) is tried again this many times, as its Retry-After says. */
export const BUSY_RETRIES = 30;
/** Waits between tries: the answer's Retry-After, within these bounds. */
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

/** The wait a busy answer asks for (Retry-After, in seconds), within RETRY_MIN_MS and RETRY_MAX_MS. */
export function retryAfterMs(response: Response): number {
  const seconds = Number(response.headers.get('retry-after'));
  return Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : RETRY_MAX_MS));
}

/**
 * The 503s no wait mends: a setting the service lacks (SPEC §4). Every other 503 says "in a
 * moment": the queue or the storage away for a failover, a full backlog (SPEC §5, §9), or a proxy
 * whose service restarts (its page is not the service's JSON).
 */
const LASTING = new Set<string>([ERRORS.API_NOT_CONFIGURED.message, ERRORS.QUERY_NOT_CONFIGURED.message]);

/**
 * Whether an answer says the service is busy for a moment, to be sent again after its Retry-After:
 * 429, or a 503 other than a LASTING one. The one rule of the looks (ApiClient.call) and the
 * uploads' loops (servidor.ts). Reads a clone: the answer's body stays the caller's.
 */
export async function isBusy(response: Response): Promise<boolean> {
  if (response.status === 429) return true;
  if (response.status !== 503) return false;
  try {
    const erro = ((await response.clone().json()) as { erro?: unknown }).erro;
    return !(typeof erro === 'string' && LASTING.has(erro));
  } catch {
    return true;
  }
}

export interface ServerOptions {
  /** The service's base URL (`--servidor`). */
  readonly servidor: string | undefined;
  /** The API key (`--chave`, else CENSO_API_KEY). */
  readonly chave: string | undefined;
}

/** Why a connection failed, by the code undici or the resolver gives, with the fix. */
const CONNECTION_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'conexão recusada (o serviço está no ar? confira o endereço e a porta em --servidor)',
  ENOTFOUND: 'nome não encontrado (confira o endereço em --servidor)',
  EAI_AGAIN: 'nome não resolvido (confira a rede e o DNS)',
  ETIMEDOUT: 'sem resposta (confira a rede e o endereço em --servidor)',
  UND_ERR_CONNECT_TIMEOUT: 'sem resposta (confira a rede e o endereço em --servidor)',
  EHOSTUNREACH: 'endereço inalcançável (confira a rede)',
  ENETUNREACH: 'rede inalcançável (confira a rede)',
  ECONNRESET: 'a conexão caiu',
  UND_ERR_SOCKET: 'a conexão caiu',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'certificado TLS não confiável (autoassinado)',
  SELF_SIGNED_CERT_IN_CHAIN: 'certificado TLS não confiável (autoassinado)',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'certificado TLS não confiável',
  CERT_HAS_EXPIRED: 'certificado TLS vencido',
  ERR_TLS_CERT_ALTNAME_INVALID: 'o certificado TLS é de outro nome',
};

/** The base URL as given, checked: http(s), and the service's root rather than its /api. */
function baseUrl(servidor: string): string {
  if (!/^https?:\/\/./i.test(servidor)) throw new BadUsage(`--servidor deve ser uma URL http(s), recebido ${quote(servidor)}.`);
  const base = servidor.replace(/\/+$/, '');
  // Every route already starts with /api: `https://host/api` would ask for /api/api/lotes.
  if (/\/api$/i.test(base)) {
    throw new BadUsage(`--servidor é o endereço do serviço, sem /api no fim: use ${quote(base.slice(0, -'/api'.length))}.`);
  }
  return base;
}

export class ApiClient {
  readonly base: string;
  readonly #key: string;

  private constructor(base: string, key: string) {
    this.base = base;
    this.#key = key;
  }

  /** From --servidor and --chave/CENSO_API_KEY; wrong usage (exit 2) when one is missing or malformed. */
  static from(options: ServerOptions): ApiClient {
    if (options.servidor === undefined) throw new BadUsage('--chave só se usa com --servidor.');
    const key = options.chave ?? process.env.CENSO_API_KEY?.trim();
    if (!key) throw new BadUsage('informe a chave da API em CENSO_API_KEY ou com --chave.');
    return new ApiClient(baseUrl(options.servidor), key);
  }

  /**
   * One request. Without a body (a look at a batch or a task, a download, `fechar`, a deletion: the
   * same request again asks the same thing) an answer that says the service is busy for a moment
   * (isBusy: a Redis failover, say) is waited out as its Retry-After says, up to BUSY_RETRIES
   * times; the uploads, which carry a body, wait in their own loops (servidor.ts).
   */
  async call(method: string, route: string, init: { body?: FormData | string; headers?: Record<string, string> } = {}): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const response = await this.#fetch(method, route, init);
      if (init.body !== undefined || attempt >= BUSY_RETRIES || !(await isBusy(response))) return response;
      await response.arrayBuffer();
      await sleep(retryAfterMs(response));
    }
  }

  async #fetch(method: string, route: string, init: { body?: FormData | string; headers?: Record<string, string> }): Promise<Response> {
    try {
      return await fetch(`${this.base}${route}`, { method, ...init, headers: { 'x-api-key': this.#key, ...init.headers } });
    } catch (err) {
      const { cause } = err as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } };
      // Several addresses tried (localhost: ::1 then 127.0.0.1) fail together as one AggregateError.
      const code = cause?.code ?? cause?.errors?.[0]?.code;
      const why = (code && CONNECTION_REASONS[code]) ?? (code ? `erro de conexão ${code}` : (cause?.message ?? (err as Error).message));
      throw new InputError(`não foi possível falar com o servidor ${this.base}: ${why}.`);
    }
  }

  /**
   * JSON of a 2xx answer; the service's own `erro` otherwise (refusal()). `holds` says whether the
   * answer has what the caller reads (a list, an id): a 200 that is not the service's JSON (a
   * proxy's login page, an empty body, issue 50) is one line saying so, never a stack trace.
   */
  async json<T>(response: Response, holds: (value: T) => boolean = () => true): Promise<T> {
    if (response.ok) return this.body(response, holds);
    throw await this.refusal(response);
  }

  /** The JSON object of an answer the caller already judged a success (see json()). */
  async body<T>(response: Response, holds: (value: T) => boolean = () => true): Promise<T> {
    const text = await response.text();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && holds(value as T)) return value as T;
    const route = new URL(response.url).pathname;
    const type = response.headers.get('content-type')?.split(';')[0]?.trim();
    const what = text.trim() === '' ? 'resposta vazia' : type ? `resposta ${type}` : 'resposta que não é JSON';
    throw new InputError(
      `o endereço ${this.base} não respondeu como um censo-api (HTTP ${response.status} em ${route}, ${what}): ` +
        'confira --servidor (um proxy ou uma página de login no caminho?).',
    );
  }

  /** The `erro` of a refusal; null when the answer is not the service's JSON. */
  async erro(response: Response): Promise<string | null> {
    const text = await response.text();
    try {
      const erro = (JSON.parse(text) as { erro?: unknown }).erro;
      return typeof erro === 'string' ? erro : null;
    } catch {
      return null;
    }
  }

  /** A refusal as one line: the service's words with what to do, or what the answer says it is not. */
  async refusal(response: Response): Promise<InputError> {
    const route = new URL(response.url).pathname;
    const erro = await this.erro(response);
    const status = `HTTP ${response.status}`;
    if (erro === null) {
      // A proxy's page, another service on that address, a path prefix missing from --servidor.
      return new InputError(`o endereço ${this.base} não respondeu como um censo-api (${status} em ${route}): confira --servidor.`);
    }
    if (response.status === 401) return new InputError(`${erro.replace(/\.$/, '')}: confira CENSO_API_KEY ou --chave (${status}).`);
    return new InputError(`${erro} (${status})`);
  }
}
