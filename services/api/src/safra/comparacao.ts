// The comparison with a round whose results have expired (SPEC §13): the earlier round from the
// ledger (fingerprints and counts), the current one from its results. The counts are the ones
// compararRodadas gives while both rounds exist (the same key, fingerprinted); the rows are the
// current round's divergences, each `nova` or `persistente` since a round. What was resolved is
// counted per school, not listed: the ledger does not know who it was, by design.
import { codigosDiferem, codigosInep, contagemVazia, contarAtual, somarContagem } from '@censo/shared';
import type { CodigosInep, Comparacao, DivergenciaRodada, LinhaComparacao, ResumoComparacao, Rodada, SemPar } from '@censo/shared';
import type { EscolaSafra, RodadaSafra, SafraLedger } from './ledger.js';

/** A row of the ledger's comparison: the current round's divergence, and since which round it persists. */
export type LinhaComparacaoSafra = LinhaComparacao & { readonly persistente_desde: number | null };

export type ComparacaoSafra = Omit<Comparacao, 'comparacao'> & {
  readonly comparacao: LinhaComparacaoSafra[];
  /** Where the earlier round came from: its results are gone, the ledger kept its counts. */
  readonly fonte: 'safra';
  readonly rodada_anterior: number;
};

/**
 * The school a file of a round is (SPEC §13, issue 54): its INEP code when its return carried one,
 * else the `referencia` it was sent by.
 */
export const escolaOf = (referencia: string, codigo: string | null | undefined): { escola: string; origem: 'inep' | 'referencia' } =>
  codigo ? { escola: codigo, origem: 'inep' } : { escola: referencia, origem: 'referencia' };

/**
 * Which of the ledger's schools each school of the current round is, by compararRodadas's rules
 * (progresso.ts `pairs`) but the folder's: the same INEP code when both carry one, else the same
 * `referencia` unless their codes differ; each earlier school once.
 */
function paresDeEscolas(
  antes: ReadonlyMap<string, EscolaSafra>,
  atuais: readonly string[],
  codigos: CodigosInep,
): Map<string, EscolaSafra> {
  const porCodigo = new Map<string, EscolaSafra>();
  const porReferencia = new Map<string, EscolaSafra>();
  for (const escola of antes.values()) {
    if (escola.escolaOrigem === 'inep' && !escola.falhou) porCodigo.set(escola.escola, escola);
    if (!porReferencia.has(escola.referencia)) porReferencia.set(escola.referencia, escola);
  }
  const codigoDe = (escola: EscolaSafra) => (escola.escolaOrigem === 'inep' ? escola.escola : undefined);
  const paired = new Map<string, EscolaSafra>();
  const taken = new Set<EscolaSafra>();
  for (const [codigo, referencia] of codigos.referenciaDe) {
    const earlier = porCodigo.get(codigo);
    if (earlier === undefined) continue;
    paired.set(referencia, earlier);
    taken.add(earlier);
  }
  for (const referencia of atuais) {
    const earlier = porReferencia.get(referencia);
    if (earlier === undefined || paired.has(referencia) || taken.has(earlier)) continue;
    if (codigosDiferem(codigos.deReferencia.get(referencia), codigoDe(earlier))) continue;
    paired.set(referencia, earlier);
    taken.add(earlier);
  }
  return paired;
}

export async function compararComSafra(ledger: SafraLedger, anterior: RodadaSafra, dono: string, atual: Rodada): Promise<ComparacaoSafra> {
  const antes = await ledger.escolas(anterior.lote);
  // The current round's divergences by school, then by key (a key seen twice keeps its later row);
  // fingerprinted once its school is paired, under the earlier school's key, so a school the
  // ledger keyed by its name matches as well as one keyed by its code.
  const porReferencia = new Map<string, Map<string, DivergenciaRodada>>();
  for (const referencia of atual.referencias) if (!porReferencia.has(referencia)) porReferencia.set(referencia, new Map());
  for await (const d of atual.divergencias) {
    let school = porReferencia.get(d.referencia);
    if (!school) porReferencia.set(d.referencia, (school = new Map()));
    const key = JSON.stringify([d.codigo_na_escola, d.chave ?? `campo:${d.campo}`]);
    school.delete(key);
    school.set(key, d);
  }
  const falhas = new Map<string, string>();
  for (const { referencia, erro } of atual.falhas ?? [])
    if (!porReferencia.has(referencia) && !falhas.has(referencia)) falhas.set(referencia, erro);
  const codigos = codigosInep(atual.escolas, (referencia) => porReferencia.has(referencia));
  const paired = paresDeEscolas(antes, [...porReferencia.keys(), ...falhas.keys()], codigos);

  const lidas = new Map<string, Map<string, DivergenciaRodada & { par: string }>>();
  for (const [referencia, divergencias] of porReferencia) {
    const escola = paired.get(referencia)?.escola ?? escolaOf(referencia, codigos.deReferencia.get(referencia)).escola;
    const school = new Map<string, DivergenciaRodada & { par: string }>();
    for (const d of divergencias.values()) {
      const par = ledger.impressoes.par(escola, d.codigo_na_escola, d.chave, d.campo);
      school.set(par, { ...d, par });
    }
    lidas.set(referencia, school);
  }

  const persistentes = new Set<string>();
  const comparacao: LinhaComparacaoSafra[] = [];
  const resumo: ResumoComparacao[] = [];
  const total = contagemVazia();
  const semPar: SemPar[] = [];
  const pending: { linha: Omit<LinhaComparacaoSafra, 'persistente_desde'>; par: string }[] = [];
  for (const [referencia, agora] of lidas) {
    const earlier: EscolaSafra | undefined = paired.get(referencia);
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
    resumo.push(
      earlier.referencia === referencia ? { referencia, ...counts } : { referencia, referencia_anterior: earlier.referencia, ...counts },
    );
    somarContagem(total, counts);
  }
  const laterOf = new Map([...paired].map(([later, earlier]) => [earlier, later]));
  for (const earlier of antes.values()) {
    if (earlier.falhou) continue;
    const referencia = earlier.referencia;
    const later = laterOf.get(earlier);
    if (later !== undefined && lidas.has(later)) continue;
    const erro = later === undefined ? undefined : falhas.get(later);
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
