// The season view (SPEC §13, GET /api/safras/{ano}): every round of the owner's year and, per
// school, its divergences per round, what is still open in its latest round and since when, and
// who fixes it (`correcao`). Built from the ledger alone: it answers after every batch expired.
import type { SafraLedger } from './ledger.js';

export interface RodadaTemporada {
  readonly rodada: number;
  readonly lote: string;
  readonly criado_em: string;
  readonly escolas: number;
  readonly arquivos: number;
  readonly falhas: number;
  readonly divergencias: number;
  /** Schools read in the round with no divergence. */
  readonly escolas_sem_divergencias: number;
}

/** The ways a divergence gets fixed (SPEC §11), as the ledger counts the open ones. */
export const CORRECOES_TEMPORADA = ['arquivo', 'educacenso', 'formulario', 'receita', 'grafia'] as const;

export interface EscolaTemporada {
  readonly escola: string;
  readonly referencia: string;
  /** Divergences per round, in the rounds' order; null where the school had no file read. */
  readonly por_rodada: (number | null)[];
  /** Divergences of its latest round read, and the first round each has held since. */
  readonly abertas: number;
  readonly abertas_desde: number | null;
  readonly ultima_rodada: number;
  /** The open ones by way of fixing; `grafia` needs nothing (SPEC §11), so is apart from `pendentes`. */
  readonly correcao: Record<(typeof CORRECOES_TEMPORADA)[number], number>;
  /** Open divergences that need someone to act (all but `grafia`). */
  readonly pendentes: number;
}

export interface Temporada {
  readonly ano: number;
  readonly rodadas: RodadaTemporada[];
  readonly escolas: EscolaTemporada[];
}

export async function temporadaOf(ledger: SafraLedger, dono: string, ano: number): Promise<Temporada> {
  const rodadas = await ledger.rodadas(dono, ano);
  const numero = new Map(rodadas.map((r) => [r.lote, r.numero]));
  const arquivos = await ledger.db.query<{
    lote: string;
    escola: string;
    referencia: string;
    falhou: boolean;
    divergencias: number;
    tarefa: string;
  }>(
    'SELECT lote, escola, referencia, falhou, divergencias, tarefa FROM safra.arquivos WHERE dono = $1 AND ano = $2 ORDER BY concluida_em, tarefa',
    [dono, ano],
  );
  const resumo = new Map<
    string,
    { escolas: Set<string>; lidas: Map<string, number>; arquivos: number; falhas: number; divergencias: number }
  >();
  const escolas = new Map<string, { referencia: string; por: Map<number, number>; tarefa: Map<number, string> }>();
  for (const a of arquivos) {
    const n = numero.get(a.lote)!;
    let r = resumo.get(a.lote);
    if (!r) resumo.set(a.lote, (r = { escolas: new Set(), lidas: new Map(), arquivos: 0, falhas: 0, divergencias: 0 }));
    r.escolas.add(a.escola);
    r.arquivos++;
    if (a.falhou) {
      r.falhas++;
      continue;
    }
    // A school sent twice in a round counts its later file (the comparison's rule).
    r.divergencias += Number(a.divergencias) - (r.lidas.get(a.escola) ?? 0);
    r.lidas.set(a.escola, Number(a.divergencias));
    let e = escolas.get(a.escola);
    if (!e) escolas.set(a.escola, (e = { referencia: a.referencia, por: new Map(), tarefa: new Map() }));
    e.por.set(n, Number(a.divergencias));
    e.tarefa.set(n, a.tarefa);
    e.referencia = a.referencia;
  }
  // The open divergences: those of each school's latest read file, with the rounds that held each.
  const latest = [...escolas.values()].map((e) => e.tarefa.get(Math.max(...e.por.keys()))!);
  const abertas = await ledger.db.query<{ tarefa: string; escola: string; par: string; correcao: string | null }>(
    'SELECT tarefa, escola, par, correcao FROM safra.divergencias WHERE tarefa = ANY($1::text[])',
    [latest],
  );
  const historia = await ledger.db.query<{ par: string; lote: string }>(
    'SELECT d.par, d.lote FROM safra.divergencias d JOIN safra.arquivos a ON a.tarefa = d.tarefa WHERE a.dono = $1 AND a.ano = $2',
    [dono, ano],
  );
  const rodadasDoPar = new Map<string, Set<number>>();
  for (const h of historia) {
    let set = rodadasDoPar.get(h.par);
    if (!set) rodadasDoPar.set(h.par, (set = new Set()));
    set.add(numero.get(h.lote)!);
  }
  const porEscola = new Map<string, typeof abertas>();
  for (const row of abertas) porEscola.set(row.escola, [...(porEscola.get(row.escola) ?? []), row]);

  const linhas: EscolaTemporada[] = [];
  for (const [escola, e] of escolas) {
    const lidas = [...e.por.keys()].sort((a, b) => a - b);
    const ultima = lidas.at(-1)!;
    const correcao = Object.fromEntries(CORRECOES_TEMPORADA.map((c) => [c, 0])) as EscolaTemporada['correcao'];
    let desde: number | null = null;
    const open = porEscola.get(escola) ?? [];
    for (const row of open) {
      if (row.correcao && row.correcao in correcao) correcao[row.correcao as keyof typeof correcao]++;
      // Since the earliest round of an unbroken run of the school's read rounds that held it.
      let since = ultima;
      const held = rodadasDoPar.get(row.par) ?? new Set<number>();
      for (let i = lidas.length - 2; i >= 0 && held.has(lidas[i]!); i--) since = lidas[i]!;
      desde = desde === null ? since : Math.min(desde, since);
    }
    linhas.push({
      escola,
      referencia: e.referencia,
      por_rodada: rodadas.map((r) => e.por.get(r.numero) ?? null),
      abertas: open.length,
      abertas_desde: desde,
      ultima_rodada: ultima,
      correcao,
      pendentes: open.length - correcao.grafia,
    });
  }
  return {
    ano,
    rodadas: rodadas.map((r) => {
      const s = resumo.get(r.lote)!;
      return {
        rodada: r.numero,
        lote: r.lote,
        criado_em: new Date(r.criadoEm).toISOString(),
        escolas: s.escolas.size,
        arquivos: s.arquivos,
        falhas: s.falhas,
        divergencias: s.divergencias,
        escolas_sem_divergencias: [...s.lidas.values()].filter((n) => n === 0).length,
      };
    }),
    escolas: linhas,
  };
}
