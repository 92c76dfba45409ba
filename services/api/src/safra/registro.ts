// The adapter from the task domain's port to the ledger: a batch's divergencias-rf ends, each read
// back from its stored result (the worker's JSON answer) into counts and fingerprints.
import type { Logger, Storage } from '@censo/shared';
import { RESULT_FILE } from '../tarefas/model.js';
import { donoKey } from '../tarefas/store.js';
import type { FimNaSafra, SafraPort } from '../tarefas/safra-port.js';
import { escolaOf } from './comparacao.js';
import type { ArquivoSafra, DivergenciaSafra, SafraLedger } from './ledger.js';

const text = (value: unknown): string => (typeof value === 'string' ? value : value === null || value === undefined ? '' : String(value));

/**
 * The divergences of a task's stored result (`{"divergencias": [...]}`, the worker's JSON answer),
 * parsed whole: one school's return, a few hundred rows, held only while its row is built.
 */
async function divergenciasOf(storage: Storage, tarefa: string): Promise<DivergenciaSafra[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.area(tarefa).read(RESULT_FILE)) chunks.push(Buffer.from(chunk as Buffer));
  const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, Record<string, unknown>[]>;
  const out: DivergenciaSafra[] = [];
  for (const item of Object.values(parsed)[0] ?? []) {
    out.push({
      codigo_na_escola: text(item.codigo_na_escola),
      chave: typeof item.chave === 'string' ? item.chave : null,
      campo: text(item.campo),
      correto: text(item.correto),
      correcao: typeof item.correcao === 'string' ? item.correcao : null,
    });
  }
  return out;
}

export class RegistroSafra implements SafraPort {
  readonly #ledger: SafraLedger;
  readonly #storage: Storage;
  readonly #log: Logger;

  constructor(ledger: SafraLedger, storage: Storage, log: Logger) {
    this.#ledger = ledger;
    this.#storage = storage;
    this.#log = log;
  }

  async registrar(fins: readonly FimNaSafra[]): Promise<void> {
    const arquivos: ArquivoSafra[] = [];
    for (const { tarefa, loteCriadoEm } of fins) {
      if (tarefa.lote === null || tarefa.rota !== 'divergencias-rf' || tarefa.estado === 'cancelada' || tarefa.estado === 'aguardando')
        continue;
      // The school as the batch's answers name it (routes/tarefas/results.ts, loteLeading).
      const referencia = tarefa.referencia ?? '';
      let divergencias: DivergenciaSafra[] = [];
      if (tarefa.estado === 'concluida') {
        try {
          divergencias = await divergenciasOf(this.#storage, tarefa.id);
        } catch (err) {
          // Its result gone already (the batch deleted meanwhile): nothing of it to keep.
          this.#log.warn({ err, tarefa: tarefa.id }, 'safra: could not read a task result');
          continue;
        }
      }
      // The school by its INEP code when its return carried one (issue 54), else by its name.
      const { escola, origem } = escolaOf(referencia, tarefa.resultado?.escola);
      arquivos.push({
        tarefa: tarefa.id,
        lote: tarefa.lote,
        dono: donoKey(tarefa.dono),
        loteCriadoEm,
        escola,
        escolaOrigem: origem,
        referencia,
        falhou: tarefa.estado === 'falhou',
        erro: tarefa.erro?.erro ?? null,
        concluidaEm: tarefa.concluidaEm ?? loteCriadoEm,
        divergencias,
      });
    }
    await this.#ledger.registrar(arquivos);
  }

  async apagarLote(id: string): Promise<void> {
    await this.#ledger.apagarLote(id);
  }
}
