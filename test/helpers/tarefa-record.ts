// A task's record as intake writes it (a divergencias-rf task of its own, waiting), for the tests
// that put one in the store themselves rather than through a request.
import type { TarefaRecord } from '@censo/api/testing';

export function waitingTarefa(id: string, fields: Partial<TarefaRecord> = {}): TarefaRecord {
  return {
    id,
    dono: 'integracao',
    rota: 'divergencias-rf',
    formato: 'json',
    estado: 'aguardando',
    criadaEm: Date.now(),
    iniciadaEm: null,
    concluidaEm: null,
    expiraEm: null,
    erro: null,
    resultado: null,
    referencia: null,
    lote: null,
    seq: 0,
    arquivo: 'retorno.json',
    txtName: null,
    arquivos: [],
    entradas: [],
    idem: null,
    ...fields,
  };
}
