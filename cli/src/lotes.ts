// `censo lotes --servidor <url>`: the caller's batches on a censo-api (GET /api/lotes, newest
// first, every page), so a person who lost a batch's id finds it again; `--apagar <id>` deletes
// one (DELETE /api/lotes/{id}: its unfinished tasks cancelled, all its data gone, SPEC §7.3).
import { ApiClient, type ServerOptions } from './api-client.js';
import { InputError, quote } from './failures.js';

type Contagens = Record<'total' | 'aguardando' | 'processando' | 'concluida' | 'falhou' | 'cancelada', number>;

export interface LoteMonitor {
  readonly id: string;
  readonly nome: string | null;
  readonly estado: string;
  readonly criado_em: string;
  readonly tarefas: Contagens;
}

/** Batches a page (the service's default) and pages read at most. */
const PAGE = 100;
const MAX_PAGES = 1_000;

/** Every batch of the caller, newest first. */
export async function listLotes(options: ServerOptions): Promise<LoteMonitor[]> {
  const servidor = ApiClient.from(options);
  const lotes: LoteMonitor[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < MAX_PAGES && (pages === 0 || cursor !== null); pages++) {
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page: { lotes: LoteMonitor[]; next_cursor: string | null } = await servidor.json(
      await servidor.call('GET', `/api/lotes?limit=${PAGE}${query}`),
      (body) => Array.isArray(body.lotes),
    );
    lotes.push(...page.lotes);
    cursor = page.next_cursor;
  }
  return lotes;
}

/** One batch a line: id, estado, criado_em, the task counts, nome (last: it has any length). */
export function lotesTable(lotes: readonly LoteMonitor[]): string {
  const header = ['id', 'estado', 'criado_em', 'tarefas', 'concluidas', 'falhas', 'nome'];
  const rows = lotes.map((lote) => [
    lote.id,
    lote.estado,
    lote.criado_em,
    String(lote.tarefas.total),
    String(lote.tarefas.concluida),
    String(lote.tarefas.falhou),
    // A name is the client's text: quoted when it holds what could break the table's lines.
    lote.nome === null ? '' : /^[^\p{C}]*$/u.test(lote.nome) ? lote.nome : quote(lote.nome),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  return [header, ...rows]
    .map(
      (row) =>
        row
          .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd() + '\n',
    )
    .join('');
}

/** DELETE /api/lotes/{id}: 204, or the service's `Lote não encontrado.` (exit 1). */
export async function apagarLote(options: ServerOptions, id: string): Promise<void> {
  const servidor = ApiClient.from(options);
  const response = await servidor.call('DELETE', `/api/lotes/${encodeURIComponent(id)}`);
  if (response.status === 204) return;
  if (response.status === 404) {
    const erro = await servidor.erro(response.clone());
    // The service's own words (another principal's batch reads the same, SPEC §7.1).
    if (erro !== null) throw new InputError(erro);
  }
  throw await servidor.refusal(response);
}
