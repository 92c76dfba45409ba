// The season ledger as the task domain sees it (SPEC §13): told the ends it recorded, and the
// batches it deletes. The domain owns this port; the ledger (services/api/src/safra/) adapts it.
import type { TarefaRecord } from './model.js';

/** A batch task's end as its commit recorded it, with when its batch was created (the round's date). */
export interface FimNaSafra {
  readonly tarefa: TarefaRecord;
  readonly loteCriadoEm: number;
}

export interface SafraPort {
  /** Ends just recorded by this process's commit: kept once each, whoever tells them again. */
  registrar(fins: readonly FimNaSafra[]): Promise<void>;
  /** *Apagar* on a batch: its rows go too. */
  apagarLote(id: string): Promise<void>;
}
