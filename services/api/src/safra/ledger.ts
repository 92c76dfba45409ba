// The season ledger (SPEC §13): per round (a batch) and school, what the round's answer was, kept
// after the batch and its results expire, with no person in clear. Written once per task end
// (idempotent on the task id), read by the comparison with an expired round and the season view.
import type { SafraDb } from './db.js';
import type { Impressoes } from './impressao.js';

/** A divergence as the ledger takes it: what identifies it is fingerprinted, never stored. */
export interface DivergenciaSafra {
  readonly codigo_na_escola: string;
  readonly chave: string | null;
  readonly campo: string;
  readonly correto: string;
  readonly correcao: string | null;
}

/** One task end: a school's file in a round. */
export interface ArquivoSafra {
  readonly tarefa: string;
  readonly lote: string;
  /** The owner as the store keys it (donoKey): a hash, never the principal itself. */
  readonly dono: string;
  readonly loteCriadoEm: number;
  readonly escola: string;
  readonly escolaOrigem: 'inep' | 'referencia';
  readonly referencia: string;
  readonly falhou: boolean;
  readonly erro: string | null;
  readonly concluidaEm: number;
  readonly divergencias: readonly DivergenciaSafra[];
}

/** A round's divergence as the ledger holds it. */
export interface ParSafra {
  readonly par: string;
  readonly chave: string | null;
  readonly campo: string;
  readonly correcao: string | null;
}

/** A school of a round: read (its divergences by key) or only failed. */
export interface EscolaSafra {
  readonly escola: string;
  /** `inep`: `escola` is the INEP code its file carried (issue 54); `referencia`: it is the name it was sent by. */
  readonly escolaOrigem: 'inep' | 'referencia';
  readonly referencia: string;
  readonly falhou: boolean;
  readonly erro: string | null;
  readonly pares: Map<string, ParSafra>;
}

export interface RodadaSafra {
  readonly lote: string;
  readonly ano: number;
  readonly criadoEm: number;
  /** 1 for the owner's first round of the year. */
  readonly numero: number;
}

/** The census year of a batch: its creation's year in Brasília time (UTC−3, no daylight saving since 2019). */
export const anoOf = (ms: number): number => new Date(ms - 3 * 3_600_000).getUTCFullYear();

/** pg allows 65,535 parameters a statement; rows per INSERT stay well under it. */
const ROWS_PER_INSERT = 4_000;
/** tarefa, lote, escola, par, chave, campo, correcao. */
const COLUNAS_DIVERGENCIA = 7;

type Counts = Record<string, number>;
const bump = (counts: Counts, key: string) => (counts[key] = (counts[key] ?? 0) + 1);

function placeholders(rows: number, columns: number, casts: readonly string[] = []): string {
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    const cells: string[] = [];
    for (let c = 0; c < columns; c++) cells.push(`$${r * columns + c + 1}${casts[c] ?? ''}`);
    out.push(`(${cells.join(',')})`);
  }
  return out.join(',');
}

export class SafraLedger {
  readonly db: SafraDb;
  readonly #impressoes: Impressoes;

  constructor(db: SafraDb, impressoes: Impressoes) {
    this.db = db;
    this.#impressoes = impressoes;
  }

  get impressoes(): Impressoes {
    return this.#impressoes;
  }

  /**
   * Records task ends: one transaction, one multi-row INSERT per table (per ROWS_PER_INSERT rows).
   * A task already recorded (another replica, a retry) is left as it is, and so are its divergences.
   *
   * Rows go in task id order: an INSERT waits on a row another transaction inserted and has not
   * committed yet, so two replicas telling overlapping ends in different orders (one from its ends
   * stream, the other from its reconciler's page) could each wait on the other. PostgreSQL then
   * aborts one as a deadlock, and its ends are committed to Redis without their rows.
   */
  async registrar(told: readonly ArquivoSafra[]): Promise<number> {
    if (told.length === 0) return 0;
    const arquivos = [...told].sort((a, b) => (a.tarefa < b.tarefa ? -1 : a.tarefa > b.tarefa ? 1 : 0));
    return this.db.transaction(async (tx) => {
      const novas = new Set<string>();
      for (let i = 0; i < arquivos.length; i += ROWS_PER_INSERT) {
        const slice = arquivos.slice(i, i + ROWS_PER_INSERT);
        const params: unknown[] = [];
        for (const a of slice) {
          const contagens = { chave: {} as Counts, campo: {} as Counts, correcao: {} as Counts };
          for (const d of a.divergencias) {
            bump(contagens.chave, d.chave ?? 'outro');
            bump(contagens.campo, d.campo);
            if (d.correcao) bump(contagens.correcao, d.correcao);
          }
          params.push(
            a.tarefa,
            a.lote,
            a.dono,
            anoOf(a.loteCriadoEm),
            new Date(a.loteCriadoEm).toISOString(),
            a.escola,
            a.escolaOrigem,
            a.referencia,
            a.falhou,
            a.erro,
            a.divergencias.length,
            JSON.stringify(contagens),
            new Date(a.concluidaEm).toISOString(),
          );
        }
        const rows = await tx.query<{ tarefa: string }>(
          'INSERT INTO safra.arquivos (tarefa, lote, dono, ano, lote_criado_em, escola, escola_origem, referencia, falhou, erro, ' +
            `divergencias, contagens, concluida_em) VALUES ${placeholders(slice.length, 13, ['', '', '', '', '', '', '', '', '', '', '', '::jsonb'])} ` +
            'ON CONFLICT (tarefa) DO NOTHING RETURNING tarefa',
          params,
        );
        for (const row of rows) novas.add(row.tarefa);
      }
      // The divergences go as one array per column and one statement (unnest): a VALUES list of
      // thousands of rows cost more to bind, parse and plan than to insert (a return of 745
      // divergences per file made the ledger dearer than the whole intake, issue 54's bench).
      const columns: (string | null)[][] = Array.from({ length: COLUNAS_DIVERGENCIA }, () => []);
      for (const a of arquivos) {
        if (!novas.has(a.tarefa)) continue;
        // A key seen twice in one file keeps its later row, as the comparison does (SPEC §10).
        const byPar = new Map<string, (string | null)[]>();
        for (const d of a.divergencias) {
          const par = this.#impressoes.par(a.escola, d.codigo_na_escola, d.chave, d.campo);
          byPar.delete(par);
          byPar.set(par, [a.tarefa, a.lote, a.escola, par, d.chave, d.campo, d.correcao ?? null]);
        }
        for (const linha of byPar.values()) for (let c = 0; c < COLUNAS_DIVERGENCIA; c++) columns[c]!.push(linha[c]!);
      }
      if (columns[0]!.length > 0) {
        await tx.query(
          'INSERT INTO safra.divergencias (tarefa, lote, escola, par, chave, campo, correcao) ' +
            'SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) ' +
            'ON CONFLICT DO NOTHING',
          columns,
        );
      }
      return novas.size;
    });
  }

  /** *Apagar* on a batch (SPEC §7.3): its rows go with it, its divergences too. */
  async apagarLote(lote: string): Promise<void> {
    // No foreign key (migration 2): the files' divergences go in the same transaction.
    await this.db.transaction(async (tx) => {
      const rows = await tx.query<{ tarefa: string }>('DELETE FROM safra.arquivos WHERE lote = $1 RETURNING tarefa', [lote]);
      if (rows.length > 0) await tx.query('DELETE FROM safra.divergencias WHERE tarefa = ANY($1::text[])', [rows.map((row) => row.tarefa)]);
    });
  }

  /** Retention (SAFRA_RETENCAO_DIAS): rows of files that ended before `antes` go. How many files went. */
  async varrer(antes: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<{ tarefa: string }>('DELETE FROM safra.arquivos WHERE concluida_em < $1 RETURNING tarefa', [
        new Date(antes).toISOString(),
      ]);
      if (rows.length > 0) await tx.query('DELETE FROM safra.divergencias WHERE tarefa = ANY($1::text[])', [rows.map((row) => row.tarefa)]);
      return rows.length;
    });
  }

  /** The owner's rounds of a year, oldest first, numbered from 1. */
  async rodadas(dono: string, ano: number): Promise<RodadaSafra[]> {
    const rows = await this.db.query<{ lote: string; criado: Date | string }>(
      'SELECT lote, min(lote_criado_em) AS criado FROM safra.arquivos WHERE dono = $1 AND ano = $2 GROUP BY lote ORDER BY 2, 1',
      [dono, ano],
    );
    return rows.map((row, i) => ({ lote: row.lote, ano, criadoEm: new Date(row.criado).getTime(), numero: i + 1 }));
  }

  /** The round `lote` of `dono`, or null when the ledger holds none of it (or it is another's). */
  async rodada(lote: string, dono: string): Promise<RodadaSafra | null> {
    const rows = await this.db.query<{ ano: number; criado: Date | string }>(
      'SELECT ano, min(lote_criado_em) AS criado FROM safra.arquivos WHERE lote = $1 AND dono = $2 GROUP BY ano',
      [lote, dono],
    );
    const row = rows[0];
    if (row === undefined) return null;
    return (await this.rodadas(dono, Number(row.ano))).find((rodada) => rodada.lote === lote) ?? null;
  }

  /** A round's schools as the ledger holds them, in the order their files ended. */
  async escolas(lote: string): Promise<Map<string, EscolaSafra>> {
    const arquivos = await this.db.query<{
      tarefa: string;
      escola: string;
      escola_origem: 'inep' | 'referencia';
      referencia: string;
      falhou: boolean;
      erro: string | null;
    }>('SELECT tarefa, escola, escola_origem, referencia, falhou, erro FROM safra.arquivos WHERE lote = $1 ORDER BY concluida_em, tarefa', [
      lote,
    ]);
    const escolas = new Map<string, EscolaSafra>();
    for (const a of arquivos) {
      const known = escolas.get(a.escola);
      // A school read in the round is read, whatever else of it failed.
      if (known && !known.falhou) continue;
      if (known && a.falhou) continue;
      escolas.set(a.escola, {
        escola: a.escola,
        escolaOrigem: a.escola_origem,
        referencia: a.referencia,
        falhou: a.falhou,
        erro: a.erro,
        pares: new Map(),
      });
    }
    // A failed file has no code, so it is keyed by its name: a name also read (under its code) is read.
    const lidas = new Set([...escolas.values()].filter((escola) => !escola.falhou).map((escola) => escola.referencia));
    for (const [key, escola] of escolas)
      if (escola.falhou && escola.escolaOrigem === 'referencia' && lidas.has(escola.referencia)) escolas.delete(key);
    const pares = await this.db.query<ParSafra & { escola: string }>(
      'SELECT d.escola, d.par, d.chave, d.campo, d.correcao FROM safra.divergencias d JOIN safra.arquivos a ON a.tarefa = d.tarefa ' +
        'WHERE d.lote = $1 ORDER BY a.concluida_em, a.tarefa',
      [lote],
    );
    for (const p of pares) {
      const escola = escolas.get(p.escola);
      if (escola === undefined || escola.falhou) continue;
      escola.pares.delete(p.par);
      escola.pares.set(p.par, { par: p.par, chave: p.chave, campo: p.campo, correcao: p.correcao });
    }
    return escolas;
  }

  /**
   * Schools (of every owner) whose latest file read in `ano` still holds a divergence that needs
   * someone to act (all but `grafia`, SPEC §11): the metric censo_safra_escolas_com_pendencias.
   */
  async escolasComPendencias(ano: number): Promise<number> {
    const rows = await this.db.query<{ n: string | number }>(
      'WITH ultimos AS (SELECT DISTINCT ON (dono, escola) tarefa FROM safra.arquivos WHERE ano = $1 AND NOT falhou ' +
        'ORDER BY dono, escola, lote_criado_em DESC, concluida_em DESC) ' +
        "SELECT count(*) AS n FROM ultimos u WHERE EXISTS (SELECT 1 FROM safra.divergencias d WHERE d.tarefa = u.tarefa AND d.correcao IS DISTINCT FROM 'grafia')",
      [ano],
    );
    return Number(rows[0]?.n ?? 0);
  }
}
