// INEP's census calendar as data (SPEC §13): services/api/data/calendario-inep.json, with each
// date's source, or the operator's file (SAFRA_CALENDARIO). A deadline is the end of its day in
// Brasília (UTC−3): a school may still send on the day itself.
import { readFile } from 'node:fs/promises';
import { ConfigError } from '@censo/shared';

export interface Prazo {
  readonly etapa: string;
  readonly titulo: string;
  readonly inicio: string;
  readonly fim: string;
  readonly fonte: string;
}

export type Calendario = ReadonlyMap<number, readonly Prazo[]>;

export const CALENDARIO_PADRAO = new URL('../../data/calendario-inep.json', import.meta.url);

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;
/** Brasília is UTC−3 all year (no daylight saving since 2019). */
const BRASILIA_MS = 3 * 3_600_000;

/** The last instant of `date` (YYYY-MM-DD) in Brasília. */
export const fimDoDia = (date: string): number => Date.parse(`${date}T00:00:00Z`) + DAY_MS + BRASILIA_MS - 1;

export async function loadCalendario(file: URL | string = CALENDARIO_PADRAO): Promise<Calendario> {
  const where = `SAFRA_CALENDARIO ${file instanceof URL ? file.pathname : file}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${where}: não foi possível ler o calendário (${(err as Error).message}).`);
  }
  const anos = (parsed as { anos?: unknown }).anos;
  if (typeof anos !== 'object' || anos === null) throw new ConfigError(`${where}: falta o objeto "anos".`);
  const calendario = new Map<number, Prazo[]>();
  for (const [ano, prazos] of Object.entries(anos)) {
    if (!/^\d{4}$/.test(ano) || !Array.isArray(prazos)) throw new ConfigError(`${where}: "anos.${ano}" deve ser uma lista de prazos.`);
    const lista: Prazo[] = [];
    for (const [i, prazo] of (prazos as unknown[]).entries()) {
      const p = prazo as Partial<Record<keyof Prazo, unknown>>;
      const ok =
        typeof p.etapa === 'string' &&
        typeof p.titulo === 'string' &&
        typeof p.fonte === 'string' &&
        p.fonte.trim() !== '' &&
        typeof p.inicio === 'string' &&
        DATE.test(p.inicio) &&
        typeof p.fim === 'string' &&
        DATE.test(p.fim) &&
        p.inicio <= p.fim;
      if (!ok)
        throw new ConfigError(
          `${where}: o prazo ${i + 1} de ${ano} precisa de etapa, titulo, fonte, inicio e fim (AAAA-MM-DD, inicio ≤ fim).`,
        );
      lista.push(p as Prazo);
    }
    calendario.set(
      Number(ano),
      lista.sort((a, b) => a.fim.localeCompare(b.fim)),
    );
  }
  return calendario;
}

export interface ProximoPrazo {
  readonly etapa: string;
  readonly titulo: string;
  readonly fim: string;
  readonly fonte: string;
  /** Whole days from today (Brasília) to the deadline's day: 0 on the day itself. */
  readonly dias: number;
}

/** The year's next deadline not yet past at `now`, or null when none is left (or the year is not in the calendar). */
export function proximoPrazo(calendario: Calendario, ano: number, now: number): ProximoPrazo | null {
  const today = Math.floor((now - BRASILIA_MS) / DAY_MS);
  for (const prazo of calendario.get(ano) ?? []) {
    if (fimDoDia(prazo.fim) < now) continue;
    const day = Math.floor(Date.parse(`${prazo.fim}T00:00:00Z`) / DAY_MS);
    return { etapa: prazo.etapa, titulo: prazo.titulo, fim: prazo.fim, fonte: prazo.fonte, dias: day - today };
  }
  return null;
}
