// The comparison with a round whose results have expired (SPEC §13): the earlier round from the
// ledger (fingerprints and counts), the current one from its results. The counts are the ones
// compararRodadas gives while both rounds exist (the same key, fingerprinted); the rows are the
// current round's divergences, each `nova` or `persistente` since a round. What was resolved is
// counted per school, not listed: the ledger does not know who it was, by design.
import { contagemVazia, contarAtual, somarContagem } from '@censo/shared';
import type { Comparacao, DivergenciaRodada, LinhaComparacao, ResumoComparacao, Rodada, SemPar } from '@censo/shared';
import type { EscolaSafra, RodadaSafra, SafraLedger } from './ledger.js';

/** A row of the ledger's comparison: the current round's divergence, and since which round it persists. */
export type LinhaComparacaoSafra = LinhaComparacao & { readonly persistente_desde: number | null };

export type ComparacaoSafra = Omit<Comparacao, 'comparacao'> & {
  readonly comparacao: LinhaComparacaoSafra[];
  /** Where the earlier round came from: its results are gone, the ledger kept its counts. */
  readonly fonte: 'safra';
  readonly rodada_anterior: number;
};

/** The school a file of a round is (SPEC §13): its referencia here, as no result carries an INEP code. */
export const escolaOf = (referencia: string): string => referencia;

export async function compararComSafra(ledger: SafraLedger, anterior: RodadaSafra, dono: string, atual: Rodada): Promise<ComparacaoSafra> {
  const antes = await ledger.escolas(anterior.lote);
  const lidas = new Map<string, Map<string, DivergenciaRodada & { par: string }>>();
  for (const referencia of atual.referencias) if (!lidas.has(referencia)) lidas.set(referencia, new Map());
  for await (const d of atual.divergencias) {
    let school = lidas.get(d.referencia);
    if (!school) lidas.set(d.referencia, (school = new Map()));
    const par = ledger.impressoes.par(escolaOf(d.referencia), d.codigo_na_escola, d.chave, d.campo);
    school.delete(par);
    school.set(par, { ...d, par });
  }
  const falhas = new Map<string, string>();
  for (const { referencia, erro } of atual.falhas ?? [])
    if (!lidas.has(referencia) && !falhas.has(referencia)) falhas.set(referencia, erro);

  const persistentes = new Set<string>();
  const comparacao: LinhaComparacaoSafra[] = [];
  const resumo: ResumoComparacao[] = [];
  const total = contagemVazia();
  const semPar: SemPar[] = [];
  const pending: { linha: Omit<LinhaComparacaoSafra, 'persistente_desde'>; par: string }[] = [];
  for (const [referencia, agora] of lidas) {
    const earlier: EscolaSafra | undefined = antes.get(escolaOf(referencia));
    if (earlier === undefined || earlier.falhou) {
      semPar.push({
        referencia,
        rodada: 'atual',
        motivo: earlier?.falhou ? 'falhou' : 'sem_arquivo',
        erro: earlier?.falhou ? earlier.erro : null,
      });
      continue;
    }
    const counts = contagemVazia();
    for (const par of earlier.pares.keys()) if (!agora.has(par)) counts.resolvidas++;
    for (const [par, d] of agora) {
      const persiste = earlier.pares.has(par);
      if (persiste) {
        counts.persistentes++;
        persistentes.add(par);
      } else counts.novas++;
      contarAtual(counts, d.correcao);
      pending.push({
        par,
        linha: {
          referencia,
          codigo_na_escola: d.codigo_na_escola,
          chave: d.chave,
          campo: d.campo,
          situacao: persiste ? 'persistente' : 'nova',
          enviado_anterior: null,
          correto_anterior: null,
          enviado_atual: d.enviado,
          correto_atual: d.correto,
          correcao: d.correcao ?? null,
        },
      });
    }
    resumo.push({ referencia, ...counts });
    somarContagem(total, counts);
  }
  for (const [escola, earlier] of antes) {
    if (earlier.falhou) continue;
    const referencia = earlier.referencia;
    if (lidas.has(referencia) && escolaOf(referencia) === escola) continue;
    const erro = falhas.get(referencia);
    semPar.push({ referencia, rodada: 'anterior', motivo: erro === undefined ? 'sem_arquivo' : 'falhou', erro: erro ?? null });
  }
  const desde = await desdeDe(ledger, anterior, dono, persistentes);
  for (const { linha, par } of pending)
    comparacao.push({ ...linha, persistente_desde: linha.situacao === 'persistente' ? (desde.get(par) ?? anterior.numero) : null });
  return { comparacao, resumo, total, referencias_sem_par: semPar, fonte: 'safra', rodada_anterior: anterior.numero };
}

/** The first round of the year, up to `anterior`, that held each persisting divergence. */
async function desdeDe(ledger: SafraLedger, anterior: RodadaSafra, dono: string, pares: ReadonlySet<string>): Promise<Map<string, number>> {
  const desde = new Map<string, number>();
  if (pares.size === 0) return desde;
  const rodadas = await ledger.rodadas(dono, anterior.ano);
  const numero = new Map(rodadas.map((rodada) => [rodada.lote, rodada.numero]));
  const rows = await ledger.db.query<{ par: string; lote: string }>(
    'SELECT d.par, d.lote FROM safra.divergencias d JOIN safra.arquivos a ON a.tarefa = d.tarefa ' +
      'WHERE a.dono = $1 AND a.ano = $2 AND a.lote_criado_em <= $3 AND d.par = ANY($4::text[])',
    [dono, anterior.ano, new Date(anterior.criadoEm).toISOString(), [...pares]],
  );
  for (const row of rows) {
    const n = numero.get(row.lote);
    if (n !== undefined && n < (desde.get(row.par) ?? Infinity)) desde.set(row.par, n);
  }
  return desde;
}
