// Issue 55: the reconciler records only ends that are late. A worker tells its ends at most
// TELL_ENDS_MS apart, so while a batch runs there are always a second's worth of tasks finished
// and not yet told; a reconciler that recorded those raced the tell it was waiting for, and each
// such "recorded" end held its scan at every 2 s instead of backing off to every 8 s, for nothing.
// An end is the reconciler's once it is MISSED_END_MS old; the tell (or a look at the task) records
// a fresh one whatever its age.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@censo/shared';
import { createMemoryStore, Maintenance, MISSED_END_MS, TarefasService, type JobObservation, type TaskExecution } from '@censo/api/testing';
import { waitingTarefa } from '../helpers/tarefa-record.js';

// The reconciler compares ends with the clock (its jobs' own, as start times): the tests run on it.
const NOW = Date.now();

/** An executor whose every job ended (cancelled: the shortest end to build) at `finishedAt`. */
function endedAt(
  finishedAt: () => number,
  firstLook: Promise<void> = Promise.resolve(),
): TaskExecution & { readonly looks: { count: number } } {
  const looks = { count: 0 };
  const observe = (): JobObservation => ({ state: 'failed', startedAt: NOW - 60_000, finishedAt: finishedAt(), why: 'cancelled' });
  return {
    looks,
    mode: 'bullmq',
    groupSize: async () => 1,
    idSource: () => () => randomUUID(),
    submit: async () => undefined,
    inspect: async () => {
      looks.count++;
      return observe();
    },
    inspectAll: async (tasks) => {
      if (looks.count++ === 0) await firstLook;
      return tasks.map(observe);
    },
    cancel: async () => undefined,
    forget: async () => undefined,
    waiting: async () => 0,
    running: async () => new Map(),
    onSettled: () => undefined,
    close: async () => undefined,
  };
}

async function serviceWith(finishedAt: () => number, ids: readonly string[] = ['a'], firstLook?: Promise<void>) {
  const execution = endedAt(finishedAt, firstLook);
  const service = new TarefasService({
    store: createMemoryStore(() => NOW),
    execution,
    // Only an ended task's upload is dropped from it here.
    storage: { area: () => ({ discard: async () => undefined }) } as never,
    config: {
      resultTtlMs: 3_600_000,
      jobTimeoutMs: 60_000,
      uploadTimeoutMs: 60_000,
      webhookAllowPrivate: false,
      loteMaxMs: 3_600_000,
      maxLotesAbertos: 10,
      maxLotesPorHora: 10,
    },
    log: createLogger({ logLevel: 'silent' }, {}),
    now: () => NOW,
  });
  for (const id of ids) expect((await service.createTarefas([waitingTarefa(id, { criadaEm: NOW - 120_000 })], null)).ok).toBe(true);
  return { service, execution, maintenance: new Maintenance(service, 60_000) };
}

describe('the reconciler leaves fresh ends to their tell (issue 55)', () => {
  it('an end younger than MISSED_END_MS stays unrecorded by the scan, which backs off as if the task waited', async () => {
    const { service, maintenance, execution } = await serviceWith(() => NOW - 200);
    const scannedAt: number[] = [];
    for (let pass = 1; pass <= 6; pass++) {
      const before = execution.looks.count;
      await maintenance.reconcile();
      if (execution.looks.count > before) scannedAt.push(pass);
    }
    // The backoff of a scan that finds only waiting tasks: passes 1, 3 and 6.
    expect(scannedAt).toEqual([1, 3, 6]);
    expect((await service.tarefa('a'))!.estado).toBe('aguardando');
    // Its tell (or anyone looking at the task) records it at once.
    expect(await service.finish('a')).toBe(true);
    expect((await service.tarefa('a'))!.estado).toBe('cancelada');
  });

  it('an end MISSED_END_MS old is recorded by the next scan', async () => {
    const { service, maintenance } = await serviceWith(() => NOW - MISSED_END_MS - 1);
    await maintenance.reconcile();
    const record = (await service.tarefa('a'))!;
    expect(record.estado).toBe('cancelada');
    expect(record.concluidaEm).toBe(NOW - MISSED_END_MS - 1);
  });

  it('the same task in one commit from its tell and from the scan, fresh: recorded (the tell has no cutoff)', async () => {
    // A commit under way (task b's, held at its look) gathers what arrives meanwhile into the next
    // one: the scan's ends of a and b (with their cutoff) and a's tell (without).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { service, maintenance } = await serviceWith(() => NOW - 200, ['a', 'b'], held);
    const first = service.finish('b');
    // b's commit has taken its ends (those told in the same tick) and waits at its look.
    await new Promise((resolve) => setImmediate(resolve));
    const scan = maintenance.reconcile();
    const told = service.finish('a');
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await Promise.all([first, scan]);
    expect(await told).toBe(true);
    expect((await service.tarefa('a'))!.estado).toBe('cancelada');
  });
});
