// MAX_LOTES_POR_HORA (issue 50): MAX_LOTES_ABERTOS alone counts open batches, and a loop that
// creates and closes made 60 past a limit of 3. A principal's creations are counted per minute
// over the last hour, in one record read and written with the batch (guarded like the open
// count, so two replicas cannot both take the last place): at most 61 numbers, whatever the limit.
import { CensoError } from '@censo/shared';

export const HOUR_MS = 3_600_000;
export const MINUTE_MS = 60_000;
/** Creations per minute (epoch minute → count), the minutes of the last hour only. */
export type CriadosPorMinuto = Array<[minute: number, count: number]>;

/** The creations of `raw` still inside the hour that ends at `now`, oldest first. */
function criadosNaUltimaHora(raw: string | null, now: number): CriadosPorMinuto {
  const expired = Math.floor((now - HOUR_MS) / MINUTE_MS);
  return raw === null ? [] : (JSON.parse(raw) as CriadosPorMinuto).filter(([minute]) => minute > expired);
}

/** 429: the principal created MAX_LOTES_POR_HORA batches in the last hour (issue 50). */
export class TooManyLotesCreatedError extends CensoError {
  readonly status = 429;
  readonly code = 'TOO_MANY_LOTES_PER_HOUR';
  /** When the oldest minute counted leaves the hour: the errors plugin sends it as Retry-After. */
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('Muitos lotes criados na última hora.');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * The hour's creations with one more at `now`, to write back with the new batch;
 * TooManyLotesCreatedError (its Retry-After when the oldest minute leaves the hour) when `max`
 * were already made.
 */
export function withOneMoreCreation(raw: string | null, now: number, max: number): CriadosPorMinuto {
  const criados = criadosNaUltimaHora(raw, now);
  if (criados.reduce((sum, [, count]) => sum + count, 0) >= max) {
    const [oldest] = criados[0]!;
    throw new TooManyLotesCreatedError(Math.max(1, Math.ceil((oldest * MINUTE_MS + HOUR_MS - now) / 1000)));
  }
  const minute = Math.floor(now / MINUTE_MS);
  const last = criados.at(-1);
  if (last !== undefined && last[0] === minute) last[1]++;
  else criados.push([minute, 1]);
  return criados;
}
