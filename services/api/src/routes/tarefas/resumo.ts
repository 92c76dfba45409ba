// A batch's summary and its comparison with an earlier round (SPEC §10), fed from the batch's tasks
// and results; the counting, judging and writing are the core's (shared/src/core/progresso.ts), which `censo
// comparar` shares, so the route and the command give the same bytes.
import { mib, Orcamento, pesar, type Limite, type Peso } from './orcamento.js';
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import {
  CensoError,
  compararRodadas,
  comparacaoChunks,
  Resumo,
  resumoChunks,
  type Chave,
  type Correcao,
  type DivergenciaRodada,
  type FalhaRodada,
  type OutputFormat,
  type Rodada,
  type Storage,
} from '@censo/shared';
import { attachment } from '../../http/content-disposition.js';
import { CONTENT_TYPES } from '../../http/retorno-answers.js';
import { loteDivergencias } from './results.js';
import type { TarefaRecord } from '../../tarefas/model.js';
import type { TarefasService } from '../../tarefas/service.js';
import { compararComSafra, type Safra } from '../../safra/index.js';
import { anoOf, type RodadaSafra } from '../../safra/ledger.js';
import { proximoPrazo, type ProximoPrazo } from '../../safra/calendario.js';

/** A summary of the batch: its divergencias-rf files (a cancelled one is not a file read) and their divergences by kind. */
async function resumoOf(service: TarefasService, storage: Storage, loteId: string): Promise<Resumo> {
  const resumo = new Resumo();
  // One pass over the batch: each file is counted as it is read, before its divergences.
  const arquivo = (record: TarefaRecord) => {
    if (record.rota === 'divergencias-rf' && record.estado !== 'cancelada')
      resumo.arquivo(record.referencia ?? '', record.estado === 'falhou');
  };
  for await (const item of loteDivergencias(service, storage, loteId, arquivo)) {
    resumo.divergencia(String(item.referencia), (item.chave as Chave | null) ?? null, (item.correcao as Correcao | undefined) ?? null);
  }
  return resumo;
}

/**
 * The most divergences (both rounds together) one comparison may hold, and all of this process's
 * comparisons at once (issue 50): the comparison holds both rounds in memory (about 1 KiB a
 * divergence, measured: 400,000 peaked at ~380 MiB), and the Kubernetes recipe gives the API
 * 1 GiB. One comparison beyond it is refused (422); one that would take the process beyond it
 * while others run waits for them (503 with Retry-After).
 */
export const COMPARACAO_MAX_DIVERGENCIAS = 400_000;

/**
 * The same bound in bytes: the rounds' stored results (JSON) together (issue 59). A count alone let
 * a few fat divergences through (a 30,000-character code and 16,000-character values: 1,600 of
 * them took 346 MiB, four calls at once 1.2 GiB). The held rounds take about 1.7 times their JSON
 * (the strings, once each); at 160 MiB in flight the comparisons hold at most ~280 MiB, and the
 * 1 GiB pod keeps room for the API's own ~200 MiB and the answers being written.
 */
export const COMPARACAO_MAX_BYTES = 160 * 1024 * 1024;

/** The bounds in force: the constants above, lowered only by tests (a state's rounds are too large for one). */
export const comparacaoLimite: Limite = { divergencias: COMPARACAO_MAX_DIVERGENCIAS, bytes: COMPARACAO_MAX_BYTES };

/** 422: a comparison larger than COMPARACAO_MAX_DIVERGENCIAS (docs/integracao.md). */
export class ComparacaoGrandeError extends CensoError {
  readonly status = 422;
  readonly code = 'COMPARACAO_GRANDE';
  constructor(divergencias: number, bytes: number) {
    super(
      bytes > comparacaoLimite.bytes
        ? `Comparação grande demais: ${mib(bytes)} MiB de resultados nas duas rodadas, o limite é ${mib(comparacaoLimite.bytes)} MiB. ` +
            'Compare por partes (lotes menores) ou use o censo comparar.'
        : `Comparação grande demais: ${divergencias} divergências nas duas rodadas, o limite é ${comparacaoLimite.divergencias}. ` +
            'Compare por partes (lotes menores) ou use o censo comparar.',
    );
  }
}

/** 503: the process is comparing as much as it may at once (Retry-After added by the error handler). */
export class ComparacoesOcupadasError extends CensoError {
  readonly status = 503;
  readonly code = 'COMPARACOES_OCUPADAS';
  constructor() {
    super('Comparações demais em andamento, tente novamente em instantes.');
  }
}

const comparacoes = new Orcamento(
  comparacaoLimite,
  (divergencias, bytes) => new ComparacaoGrandeError(divergencias, bytes),
  () => new ComparacoesOcupadasError(),
);

/** How many divergences and result bytes this process's comparisons hold now (tests: 0 after each answer). */
export const comparacoesEmAndamento = (): number => comparacoes.emAndamento().divergencias;
export const bytesDeComparacoesEmAndamento = (): number => comparacoes.emAndamento().bytes;

/** A round's tasks in one pass: the schools read, the failed files with their erro, and how many divergences it holds. */
async function tarefasDaRodada(service: TarefasService, loteId: string) {
  const referencias: string[] = [];
  const falhas: FalhaRodada[] = [];
  // Each file's school by its INEP code, when its return carried one (issue 54).
  const escolas: [string, string][] = [];
  const peso: Peso = { divergencias: 0, bytes: 0 };
  for await (const record of service.listagens.loteTarefas(loteId)) {
    if (record.rota !== 'divergencias-rf') continue;
    if (record.estado === 'concluida') {
      referencias.push(record.referencia ?? '');
      if (record.resultado?.escola) escolas.push([record.referencia ?? '', record.resultado.escola]);
      pesar(peso, record);
    } else if (record.estado === 'falhou') {
      falhas.push({ referencia: record.referencia ?? '', erro: record.erro?.erro ?? `HTTP ${record.erro?.status ?? 500}` });
    }
  }
  return { referencias, falhas, escolas, ...peso };
}

function rodadaOf(
  service: TarefasService,
  storage: Storage,
  loteId: string,
  tarefas: { readonly referencias: string[]; readonly falhas: FalhaRodada[]; readonly escolas: [string, string][] },
): Rodada {
  return {
    referencias: tarefas.referencias,
    falhas: tarefas.falhas,
    escolas: tarefas.escolas,
    divergencias: loteDivergencias(service, storage, loteId) as AsyncIterable<DivergenciaRodada>,
  };
}

/** The chunks, then `release` (also when the reader stops early). */
async function* releasing(chunks: AsyncIterable<string | Buffer>, release: () => void): AsyncGenerator<string | Buffer> {
  try {
    yield* chunks;
  } finally {
    release();
  }
}

function send(reply: FastifyReply, name: string, format: OutputFormat, chunks: AsyncIterable<string | Buffer>): FastifyReply {
  reply.type(CONTENT_TYPES[format]).header('content-disposition', attachment(`${name}.${format}`));
  return reply.send(Readable.from(chunks, { objectMode: false }));
}

/** GET /api/lotes/{id}/resumo (SPEC §10). */
export async function sendResumo(
  reply: FastifyReply,
  service: TarefasService,
  storage: Storage,
  loteId: string,
  format: OutputFormat,
  safra: Safra | null = null,
): Promise<FastifyReply> {
  const resumo = await resumoOf(service, storage, loteId);
  const prazo = safra === null ? undefined : await prazoDoLote(service, safra, loteId);
  return send(reply, 'resumo', format, prazo === undefined ? resumoChunks(resumo, format) : resumoComPrazoChunks(resumo, prazo));
}

/** INEP's next deadline for the batch's census year (SPEC §13), at the service's clock; undefined when the batch is gone. */
async function prazoDoLote(service: TarefasService, safra: Safra, loteId: string): Promise<ProximoPrazo | null | undefined> {
  const lote = await service.lote(loteId);
  if (lote === null) return undefined;
  return proximoPrazo(safra.calendario, anoOf(lote.criadoEm), service.now());
}

/** The json summary with `prazo` (the ledger on): the days to INEP's next deadline, beside the schools' counts. */
async function* resumoComPrazoChunks(resumo: Resumo, prazo: ProximoPrazo | null): AsyncGenerator<string> {
  yield `${JSON.stringify({ resumo: resumo.linhas, total: resumo.total, prazo })}\n`;
}

/** GET /api/lotes/{id}/comparacao?anterior= (SPEC §10). */
export async function sendComparacao(
  reply: FastifyReply,
  service: TarefasService,
  storage: Storage,
  ids: { readonly anterior: string; readonly atual: string },
  format: OutputFormat,
): Promise<FastifyReply> {
  const [antes, depois] = [await tarefasDaRodada(service, ids.anterior), await tarefasDaRodada(service, ids.atual)];
  // Counted from the tasks' records before a divergence is read: refused or held off at no cost.
  const release = comparacoes.admitir({ divergencias: antes.divergencias + depois.divergencias, bytes: antes.bytes + depois.bytes });
  let comparacao;
  try {
    comparacao = await compararRodadas(rodadaOf(service, storage, ids.anterior, antes), rodadaOf(service, storage, ids.atual, depois));
  } catch (err) {
    release();
    throw err;
  }
  // Held until the answer is sent (or the client is gone): the judged rows live as long as that.
  reply.raw.once('close', release);
  return send(reply, 'comparacao', format, releasing(comparacaoChunks(comparacao, format), release));
}

/**
 * GET /api/lotes/{id}/comparacao?anterior= when the earlier round's results have expired (SPEC
 * §13): the earlier round from the season ledger, the current one from its results. Bounded as
 * the comparison is, by the current round's divergences (the ledger's side is fingerprints).
 */
export async function sendComparacaoSafra(
  reply: FastifyReply,
  service: TarefasService,
  storage: Storage,
  safra: Safra,
  ids: { readonly anterior: RodadaSafra; readonly atual: string; readonly dono: string },
  format: OutputFormat,
): Promise<FastifyReply> {
  const depois = await tarefasDaRodada(service, ids.atual);
  // The earlier round is fingerprints in the ledger: only the current one is held.
  const release = comparacoes.admitir(depois);
  let comparacao;
  try {
    comparacao = await compararComSafra(safra.ledger, ids.anterior, ids.dono, rodadaOf(service, storage, ids.atual, depois));
  } catch (err) {
    release();
    throw err;
  }
  reply.raw.once('close', release);
  return send(reply, 'comparacao', format, releasing(comparacaoSafraChunks(comparacao, format), release));
}

/** The ledger's comparison in a format: json adds `fonte` and `rodada_anterior`; csv and xlsx are the comparison's. */
async function* comparacaoSafraChunks(
  c: Awaited<ReturnType<typeof compararComSafra>>,
  format: OutputFormat,
): AsyncGenerator<string | Buffer> {
  if (format !== 'json') {
    yield* comparacaoChunks(c, format);
    return;
  }
  yield `${JSON.stringify({ fonte: c.fonte, rodada_anterior: c.rodada_anterior, comparacao: c.comparacao, resumo: c.resumo, total: c.total, referencias_sem_par: c.referencias_sem_par })}\n`;
}
