// GET /api/safras/{ano} (SPEC §13): the caller's season from the ledger — every round of the year,
// each school's divergences per round, what is still open and since when, who fixes it — and the
// days to INEP's next deadline. Registered inside the /api/* scope that authenticates; owner-scoped
// as the batches are (a principal sees the rounds it created).
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { BadInputError, CensoError, csvChunks, xlsxBookChunks, type OutputFormat, type XlsxCell } from '@censo/shared';
import { attachment } from '../http/content-disposition.js';
import { CONTENT_TYPES, FORMAT_ERROR, requestedFormat } from '../http/retorno-answers.js';
import { proximoPrazo } from '../safra/calendario.js';
import { CORRECOES_TEMPORADA, temporadaOf, type EscolaTemporada, type Temporada } from '../safra/temporada.js';
import { donoKey } from '../tarefas/store.js';
import { donoOfRequest } from './tarefas/dono.js';
import { apiKeySecurity, authErrors, errorResponses } from './schemas.js';

export const ANO_ERROR = 'Ano inválido: use quatro dígitos, como 2025.';

/** 503: this server keeps no season (a shared database without SAFRA_SEGREDO, docs/operacao.md). */
export class SafraInativaError extends CensoError {
  readonly status = 503;
  readonly code = 'SAFRA_INATIVA';
  constructor() {
    super('A safra não é guardada neste servidor (defina SAFRA_SEGREDO).');
  }
}

const schema = {
  tags: ['safras'],
  summary: 'A safra do ano: cada rodada (lote) e, por escola, as divergências por rodada, o que segue aberto e desde quando',
  description:
    'Lida do registro da safra (SPEC §13), que guarda contagens e impressões (HMAC), nunca pessoas: responde depois de os lotes expirarem. ' +
    'json: `{"ano", "prazo", "rodadas", "escolas", "escolas_com_pendencias"}`; csv: uma linha por escola; xlsx: as planilhas `escolas` e `rodadas`, ' +
    'com números como números. `prazo`: o próximo prazo do INEP no calendário e os dias até ele (null quando não há).',
  security: apiKeySecurity,
  params: { type: 'object', properties: { ano: { type: 'string', description: 'O ano do censo, como 2025.' } }, required: ['ano'] },
  querystring: { type: 'object', properties: { format: { type: 'string', enum: ['json', 'csv', 'xlsx'] } } },
  response: {
    200: {
      description: 'A safra.',
      content: {
        'application/json': { schema: { type: 'object' } },
        'text/csv': { schema: { type: 'string' } },
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { schema: { type: 'string', format: 'binary' } },
      },
    },
    ...errorResponses({
      400: `\`${ANO_ERROR}\` ou \`${FORMAT_ERROR}\``,
      503: '`A safra não é guardada neste servidor (defina SAFRA_SEGREDO).`',
    }),
    ...errorResponses(authErrors),
  },
} as const;

const describeOnly = { validatorCompiler: () => () => true };

/** A school's columns in the CSV and the workbook: the rounds, then what is open. */
function escolaColumns(temporada: Temporada): string[] {
  return [
    'escola',
    'referencia',
    ...temporada.rodadas.map((r) => `rodada_${r.rodada}`),
    'abertas',
    'abertas_desde',
    'pendentes',
    ...CORRECOES_TEMPORADA.map((c) => `correcao_${c}`),
  ];
}

const escolaCells = (e: EscolaTemporada): XlsxCell[] => [
  e.escola,
  e.referencia,
  ...e.por_rodada.map((n) => n ?? ''),
  e.abertas,
  e.abertas_desde ?? '',
  e.pendentes,
  ...CORRECOES_TEMPORADA.map((c) => e.correcao[c]),
];

const RODADA_COLUMNS = [
  'rodada',
  'lote',
  'criado_em',
  'escolas',
  'arquivos',
  'falhas',
  'divergencias',
  'escolas_sem_divergencias',
] as const;

async function* rowsOf<T, C>(items: readonly T[], cells: (item: T) => C[]): AsyncGenerator<C[]> {
  for (const item of items) yield cells(item);
}

function chunksOf(answer: Temporada & Record<string, unknown>, format: OutputFormat): AsyncIterable<string | Buffer> {
  if (format === 'json') return Readable.from([`${JSON.stringify(answer)}\n`]);
  if (format === 'csv')
    return csvChunks(
      escolaColumns(answer),
      rowsOf(answer.escolas, (e) => escolaCells(e).map(String)),
    );
  return xlsxBookChunks([
    { name: 'escolas', columns: escolaColumns(answer), rows: rowsOf(answer.escolas, escolaCells) },
    { name: 'rodadas', columns: [...RODADA_COLUMNS], rows: rowsOf(answer.rodadas, (r) => RODADA_COLUMNS.map((c) => r[c])) },
  ]);
}

async function routes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { ano: string } }>('/api/safras/:ano', { schema, ...describeOnly }, async (request, reply) => {
    const format = requestedFormat(request.query);
    if (format === null) throw new BadInputError(FORMAT_ERROR);
    const raw = request.params.ano;
    if (!/^\d{4}$/.test(raw)) throw new BadInputError(ANO_ERROR);
    const ano = Number(raw);
    const safra = app.tarefas.safra;
    if (safra === null) throw new SafraInativaError();
    const temporada = await temporadaOf(safra.ledger, donoKey(donoOfRequest(request)), ano);
    const answer = {
      ...temporada,
      prazo: proximoPrazo(safra.calendario, ano, app.tarefas.service.now()),
      escolas_com_pendencias: temporada.escolas.filter((e) => e.pendentes > 0).length,
    };
    reply.type(CONTENT_TYPES[format]).header('content-disposition', attachment(`safra-${ano}.${format}`));
    return reply.send(Readable.from(chunksOf(answer, format), { objectMode: false }));
  });
}

export const safrasRoutes = fp(routes, { name: 'censo-safras-routes', fastify: '5.x', encapsulate: true, dependencies: ['censo-tarefas'] });
