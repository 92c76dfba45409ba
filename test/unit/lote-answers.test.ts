// The batch's answers read each concluded task's stored result (SPEC §7.3). A task deleted (or
// expired) between the listing and the reading is skipped; a task still recorded whose result
// cannot be read is the storage's failure, and the answer must not go on without it. The race
// cannot be staged through HTTP deterministically, so the service and the storage are stand-ins.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { StorageUnavailableError, type Storage } from '@censo/shared';
import { loteDivergencias } from '../../services/api/dist/routes/tarefas/results.js';
import type { TarefaRecord } from '../../services/api/dist/tarefas/model.js';
import type { TarefasService } from '../../services/api/dist/tarefas/service.js';

const item = { codigo_na_escola: '1', linha: '2', campo: 'Nome', enviado: 'a', correto: 'b', is_filiacao: false, chave: 'nome' };
const stored = Buffer.from(JSON.stringify({ divergencias: [item] }));

function task(id: string): TarefaRecord {
  return {
    id,
    rota: 'divergencias-rf',
    estado: 'concluida',
    referencia: `escola-${id}`,
    arquivo: `${id}.json`,
    resultado: { bytes: stored.length },
  } as unknown as TarefaRecord;
}

/** A batch of tasks a and b; a's result cannot be read; `aNow` is what the store holds of a when asked again. */
async function read(aNow: TarefaRecord | null): Promise<object[]> {
  const [a, b] = [task('a'), task('b')];
  const service = {
    listagens: {
      async *loteTarefas() {
        yield a;
        yield b;
      },
    },
    tarefa: async (id: string) => (id === 'a' ? aNow : b),
  } as unknown as TarefasService;
  const storage = {
    area: (id: string) => ({
      read: async () => {
        if (id === 'a') throw new StorageUnavailableError({ cause: new Error('ENOENT') });
        return Readable.from([stored]);
      },
    }),
  } as unknown as Storage;
  const out: object[] = [];
  for await (const divergencia of loteDivergencias(service, storage, 'lote')) out.push(divergencia);
  return out;
}

describe("a batch's divergences, read from its tasks' stored results", () => {
  it('a task deleted since the listing is skipped: the others are answered', async () => {
    expect(await read(null)).toEqual([{ referencia: 'escola-b', arquivo: 'b.json', ...item }]);
  });

  it('a task still recorded whose result cannot be read stops the answer with the storage error', async () => {
    await expect(read(task('a'))).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});
