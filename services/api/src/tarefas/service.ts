// The rules of asynchronous intake (SPEC §7), written once over the store port: tasks, their
// batches, idempotency records, retention and webhook messages. Every change is read, computed
// and committed with guards on what was read, retried when another request or replica changed it
// meanwhile; so two replicas finishing one task count it once, and a batch ends exactly once.
//
// A task's state comes from its record when it has ended, and otherwise from its job (waiting,
// running, or ended but not yet recorded: then it is recorded now). Whoever sees the end first
// records it: the request that asks, the executor's hint, or the reconciler's pass.
import type { Config, Logger, Storage } from '@censo/shared';
import type { JobObservation, TaskExecution } from './execution.js';
import {
  contagens,
  donoOf,
  owned,
  isFinal,
  TASK_OUTPUTS,
  type Contagens,
  type Dono,
  type EstadoFinal,
  type EstadoTarefa,
  type LoteRecord,
  type TarefaAgora,
  type TarefaRecord,
} from './model.js';
import { donoKey, keys, type Guard, type TarefaStore, type Write } from './store.js';
import { Listings } from './listings.js';
import { IDEMPOTENCY_TTL_MS, IdempotencyRecords, type IdempotencyDone, type IdempotencyReservation } from './idempotency.js';
import { WebhookOutbox, webhookWrites } from './webhook-outbox.js';
import { divergenciasCount, ending } from './ending.js';
import { HOUR_MS, withOneMoreCreation } from './lote-quota.js';
import { RETRY, StoreContentionError, retrying } from './retrying.js';
import { Batched } from './batched.js';
import type { NewLoteOutcome, NewTarefaOutcome } from './outcomes.js';
import type { FimNaSafra, SafraPort } from './safra-port.js';

/** A task just committed may not be in the queue yet: a missing job is not a lost one this soon. */
const SUBMIT_GRACE_MS = 30_000;

export interface TarefasServiceDeps {
  readonly store: TarefaStore;
  readonly execution: TaskExecution;
  readonly storage: Storage;
  readonly config: Pick<
    Config,
    'resultTtlMs' | 'jobTimeoutMs' | 'uploadTimeoutMs' | 'webhookAllowPrivate' | 'loteMaxMs' | 'maxLotesAbertos' | 'maxLotesPorHora'
  >;
  readonly log: Logger;
  readonly now?: () => number;
  /** Told every state a task reaches (censo_tarefas_total). */
  readonly onEstado?: (rota: string, estado: EstadoTarefa) => void;
  /** The season ledger (SPEC §13): told the batch ends each commit recorded, and the batches deleted. */
  readonly safra?: SafraPort;
}

const parse = <T>(raw: string): T => JSON.parse(raw) as T;

/** A task's end to record, with its job's observation when the caller has it. */
interface TaskEnd {
  readonly id: string;
  readonly given: JobObservation | undefined;
  /** Record it only if its job ended before this (the reconciler's scan: maintenance.ts MISSED_END_MS). */
  readonly endedBefore?: number;
}

/** Ends recorded by one commit at most (its Lua script writes about four keys per task). */
const MAX_ENDS_PER_COMMIT = 500;

export class TarefasService {
  readonly store: TarefaStore;
  readonly execution: TaskExecution;
  readonly now: () => number;
  readonly #deps: TarefasServiceDeps;
  /** Idempotency-Key records (SPEC §7.2). */
  readonly idempotencia: IdempotencyRecords;
  /** Batches' end messages waiting to be sent (SPEC §7.4). */
  readonly webhooks: WebhookOutbox;
  /** What the listings read: a principal's batches, a batch's tasks, what runs now. */
  readonly listagens: Listings;

  constructor(deps: TarefasServiceDeps) {
    this.#deps = deps;
    this.store = deps.store;
    this.execution = deps.execution;
    this.now = deps.now ?? Date.now;
    this.listagens = new Listings(deps.store, deps.execution);
    this.idempotencia = new IdempotencyRecords(deps.store, deps.config.uploadTimeoutMs);
    this.webhooks = new WebhookOutbox({ store: deps.store, log: deps.log, now: this.now, allowPrivate: deps.config.webhookAllowPrivate });
    // The executor's hint: record the end now rather than at the next reconcile.
    deps.execution.onSettled((id) => {
      void this.finish(id).catch((err: unknown) => deps.log.warn({ err, tarefa: id }, 'could not record the end of a task'));
    });
  }

  get ttlMs(): number {
    return this.#deps.config.resultTtlMs;
  }

  /** JOB_TIMEOUT_MS: a task running longer is stopped by the reconciler (maintenance.ts). */
  get jobTimeoutMs(): number {
    return this.#deps.config.jobTimeoutMs;
  }

  // ---------------------------------------------------------------- tasks (SPEC §7.1)

  /**
   * Records the tasks of one request (in their batch, if any, in the order given), taking over the
   * request's Idempotency-Key reservation: one commit for all of them, so a request that sends
   * several returns costs one round trip, and either all its tasks exist or none does.
   */
  async createTarefas(
    records: readonly TarefaRecord[],
    idempotency: { readonly reservation: IdempotencyReservation; readonly digest: string } | null,
  ): Promise<NewTarefaOutcome> {
    const loteId = records[0]!.lote;
    return retrying<NewTarefaOutcome>(async () => {
      const now = this.now();
      const guards: Guard[] = [];
      const writes: Write[] = [];
      let tasks = [...records];
      if (loteId !== null) {
        const raw = await this.store.get(keys.lote(loteId));
        if (raw === null) return { ok: false, why: 'lote-nao-encontrado' } as const;
        const lote = parse<LoteRecord>(raw);
        if (donoOf(lote) !== records[0]!.dono) return { ok: false, why: 'lote-nao-encontrado' } as const;
        if (lote.estado !== 'aberto') return { ok: false, why: 'lote-fechado' } as const;
        const updated: LoteRecord = { ...lote, total: lote.total + tasks.length, seq: lote.seq + tasks.length, ultimoEnvioEm: now };
        tasks = tasks.map((task, i) => ({ ...task, seq: lote.seq + 1 + i }));
        guards.push({ key: keys.lote(lote.id), value: raw });
        writes.push(
          { op: 'set', key: keys.lote(lote.id), value: JSON.stringify(updated) },
          { op: 'zadd', key: keys.abertos, member: lote.id, score: now },
          ...tasks.map((task) => ({ op: 'zadd', key: keys.loteTarefas(lote.id), member: task.id, score: task.seq }) as const),
        );
      }
      for (const task of tasks) {
        writes.push(
          { op: 'set', key: keys.tarefa(task.id), value: JSON.stringify(task) },
          { op: 'zadd', key: keys.pendentes, member: task.id, score: task.criadaEm },
        );
      }
      if (idempotency) {
        const { reservation, digest } = idempotency;
        const done: IdempotencyDone = { digest, tarefa: tasks[0]!.id, ...(tasks.length > 1 ? { tarefas: tasks.map((t) => t.id) } : {}) };
        guards.push({ key: reservation.key, value: reservation.value });
        writes.push({ op: 'set', key: reservation.key, value: JSON.stringify(done), ttlMs: IDEMPOTENCY_TTL_MS });
      }
      if (await this.store.commit(guards, writes)) {
        for (const task of tasks) this.#deps.onEstado?.(task.rota, 'aguardando');
        return { ok: true, records: tasks } as const;
      }
      // The reservation ran out (an upload slower than its deadline) and another request took the key.
      if (idempotency && (await this.store.get(idempotency.reservation.key)) !== idempotency.reservation.value) {
        return { ok: false, why: 'idempotencia' } as const;
      }
      return RETRY;
    });
  }

  /** The task's record; with `dono`, only if it is that principal's. */
  async tarefa(id: string, dono?: Dono): Promise<TarefaRecord | null> {
    const raw = await this.store.get(keys.tarefa(id));
    return owned(raw === null ? null : parse<TarefaRecord>(raw), dono);
  }

  /** The task as it is now: its record once ended, else what its job is doing (its end recorded if seen). */
  async agora(id: string, dono?: Dono): Promise<TarefaAgora | null> {
    const record = await this.tarefa(id, dono);
    if (record === null) return null;
    if (isFinal(record.estado)) return { record, estado: record.estado, iniciadaEm: record.iniciadaEm };
    const observation = await this.execution.inspect(record);
    if (observation.state === 'waiting') return { record, estado: 'aguardando', iniciadaEm: null };
    if (observation.state === 'active') return { record, estado: 'processando', iniciadaEm: observation.startedAt };
    if (observation.state === 'missing' && this.now() - record.criadaEm < SUBMIT_GRACE_MS) {
      return { record, estado: 'aguardando', iniciadaEm: null };
    }
    try {
      await this.finish(id, observation);
    } catch (err) {
      // Recording the end lost to other writers every time: the answer says what the job says,
      // and the end is recorded by a later look or the reconciler.
      if (!(err instanceof StoreContentionError)) throw err;
      this.#deps.log.warn({ tarefa: id }, 'task end not recorded yet: store contention');
      return { record, estado: record.estado === 'aguardando' ? 'processando' : record.estado, iniciadaEm: null };
    }
    const after = await this.tarefa(id);
    if (after === null) return null;
    return { record: after, estado: after.estado === 'aguardando' ? 'aguardando' : after.estado, iniciadaEm: after.iniciadaEm };
  }

  /**
   * Records the end of task `id` from its job (read now unless given). Only the commit that wins
   * drops the upload and the job's trace, and counts the task in its batch.
   *
   * Ends are recorded together: every end of a batch's task rewrites the batch's record (its
   * counts), and a state's burst ends tasks faster than one guarded commit each can follow
   * (measured at 50,000 files: finishes retrying against each other until they gave up). Ends
   * that arrive while this process's previous commit is under way go in its next one. True when
   * this call's commit recorded it (false: still running or waiting, or recorded by someone else).
   */
  async finish(id: string, given?: JobObservation, only?: { readonly endedBefore: number }): Promise<boolean> {
    return (await this.#ends.add({ id, given, ...only })).has(id);
  }

  /** Ends waiting for the next commit (see finish). */
  readonly #ends = new Batched<TaskEnd, ReadonlySet<string>>((ends) => this.#finishTogether(ends), MAX_ENDS_PER_COMMIT);

  /** One commit for the ends of these tasks, whatever their batches (each batch's counts once); the ids it recorded. */
  async #finishTogether(ends: readonly TaskEnd[]): Promise<ReadonlySet<string>> {
    const observations = new Map<string, JobObservation>();
    for (const end of ends) if (end.given) observations.set(end.id, end.given);
    // A task told twice (its event and a look at it) is one end; told once without a cutoff, it has none.
    const ids = [...new Set(ends.map((end) => end.id))];
    const cutoffs = new Map<string, number>();
    for (const end of ends)
      if (end.endedBefore !== undefined) cutoffs.set(end.id, Math.max(cutoffs.get(end.id) ?? -Infinity, end.endedBefore));
    for (const end of ends) if (end.endedBefore === undefined) cutoffs.delete(end.id);
    /** Each batch's creation, as the winning commit read it: the round's date in the ledger. */
    const criados = new Map<string, number>();
    const won = await retrying(async () => {
      const raws = await this.store.getMany(ids.map((id) => keys.tarefa(id)));
      const open: { raw: string; record: TarefaRecord }[] = [];
      for (const raw of raws) {
        if (raw === null) continue;
        const record = parse<TarefaRecord>(raw);
        if (!isFinal(record.estado)) open.push({ raw, record });
      }
      // Read once per task, even across retries: a job's end does not change.
      const unread = open.filter(({ record }) => !observations.has(record.id)).map(({ record }) => record);
      const read = await this.execution.inspectAll(unread);
      unread.forEach((record, i) => observations.set(record.id, read[i]!));
      const now = this.now();
      const guards: Guard[] = [];
      const writes: Write[] = [];
      const done: TarefaRecord[] = [];
      for (const { raw, record } of open) {
        const observation = observations.get(record.id)!;
        if (observation.state === 'waiting' || observation.state === 'active') continue;
        if (observation.state === 'missing' && now - record.criadaEm < SUBMIT_GRACE_MS) continue;
        const cutoff = cutoffs.get(record.id);
        if (cutoff !== undefined && (observation.state === 'done' || observation.state === 'failed') && observation.finishedAt > cutoff)
          continue;
        const end = ending(observation, now);
        const finished: TarefaRecord = { ...record, ...end, expiraEm: record.lote === null ? end.concluidaEm + this.ttlMs : null };
        guards.push({ key: keys.tarefa(record.id), value: raw });
        writes.push(
          { op: 'set', key: keys.tarefa(record.id), value: JSON.stringify(finished) },
          { op: 'zrem', key: keys.pendentes, member: record.id },
        );
        if (record.lote === null) writes.push({ op: 'zadd', key: keys.expiram, member: `t:${record.id}`, score: finished.expiraEm! });
        done.push(finished);
      }
      if (done.length === 0) return [];
      const loteIds = [...new Set(done.flatMap((finished) => (finished.lote === null ? [] : [finished.lote])))];
      const loteRaws = await this.store.getMany(loteIds.map((id) => keys.lote(id)));
      loteIds.forEach((loteId, i) => {
        // A deleted batch's tasks are being removed with it: nothing to count.
        const loteRaw = loteRaws[i];
        if (loteRaw === null || loteRaw === undefined) return;
        let counted = parse<LoteRecord>(loteRaw);
        criados.set(loteId, counted.criadoEm);
        for (const finished of done) {
          if (finished.lote !== loteId) continue;
          const estado = finished.estado as EstadoFinal;
          counted = { ...counted, [estado]: counted[estado] + 1, ...divergenciasCount(counted, finished, estado, +1) };
        }
        guards.push({ key: keys.lote(loteId), value: loteRaw });
        writes.push(...this.#concludeIfDone(counted, now));
      });
      // The ledger first: a process that dies between the two leaves a row whose end the next
      // recorder commits (its own write then a no-op on the task id), never an end without its row.
      await this.#toSafra(done, criados);
      return (await this.store.commit(guards, writes)) ? done : RETRY;
    });
    if (won.length === 0) return new Set();
    await Promise.all(won.map((finished) => this.#afterEnd(finished)));
    await this.execution
      .forget(won)
      .catch((err: unknown) => this.#deps.log.debug({ err, tarefas: won.map(({ id }) => id) }, 'could not drop finished task jobs'));
    return new Set(won.map(({ id }) => id));
  }

  /**
   * The ends a commit is about to record, told to the season ledger in one write. Idempotent on
   * the task id, so a commit that loses and retries, or another replica that records the same
   * end, writes nothing twice. A ledger that fails is logged, never the end's failure.
   */
  async #toSafra(ends: readonly TarefaRecord[], criados: ReadonlyMap<string, number>): Promise<void> {
    const safra = this.#deps.safra;
    if (safra === undefined) return;
    const fins: FimNaSafra[] = [];
    for (const tarefa of ends) {
      const loteCriadoEm = tarefa.lote === null ? undefined : criados.get(tarefa.lote);
      if (loteCriadoEm !== undefined) fins.push({ tarefa, loteCriadoEm });
    }
    if (fins.length === 0) return;
    await safra
      .registrar(fins)
      .catch((err: unknown) => this.#deps.log.warn({ err, tarefas: fins.length }, 'safra: could not record task ends'));
  }

  /** What follows a task's recorded end: its upload (and a failed one's result) go; its job's trace then goes with the others'. */
  async #afterEnd(won: TarefaRecord): Promise<void> {
    const id = won.id;
    this.#deps.onEstado?.(won.rota, won.estado);
    // The upload is deleted as soon as its job ends (SPEC §7.1); a result only when there is one.
    const area = this.#deps.storage.area(id);
    const drop = won.estado === 'concluida' ? won.entradas : [...won.entradas, ...TASK_OUTPUTS];
    await area.discard(drop).catch((err: unknown) => this.#deps.log.warn({ err, tarefa: id }, 'could not remove a task upload'));
  }

  /** DELETE (SPEC §7.1): record, job, upload and result, now. False when there is no such task (of `dono`'s, if given). */
  async deleteTarefa(id: string, dono?: Dono): Promise<boolean> {
    const removed = await retrying(async () => {
      const raw = await this.store.get(keys.tarefa(id));
      if (raw === null) return null;
      const record = owned(parse<TarefaRecord>(raw), dono);
      if (record === null) return null;
      const guards: Guard[] = [{ key: keys.tarefa(id), value: raw }];
      const writes: Write[] = [...this.#forgetTarefa(record)];
      if (record.lote !== null) {
        const loteRaw = await this.store.get(keys.lote(record.lote));
        if (loteRaw !== null) {
          const lote = parse<LoteRecord>(loteRaw);
          const fewer: LoteRecord = {
            ...lote,
            total: lote.total - 1,
            ...(isFinal(record.estado)
              ? { [record.estado]: lote[record.estado] - 1, ...divergenciasCount(lote, record, record.estado, -1) }
              : {}),
          };
          guards.push({ key: keys.lote(lote.id), value: loteRaw });
          // Its last unfinished task gone, a closed batch has ended.
          writes.push(...this.#concludeIfDone(fewer, this.now()));
        }
      }
      return (await this.store.commit(guards, writes)) ? record : RETRY;
    });
    if (removed === null) return false;
    await this.#removeTaskData(removed);
    return true;
  }

  /** Store writes that forget a task: its record, indexes and Idempotency-Key. */
  #forgetTarefa(record: TarefaRecord): Write[] {
    const writes: Write[] = [
      { op: 'del', key: keys.tarefa(record.id) },
      { op: 'zrem', key: keys.pendentes, member: record.id },
      { op: 'zrem', key: keys.expiram, member: `t:${record.id}` },
    ];
    if (record.lote !== null) writes.push({ op: 'zrem', key: keys.loteTarefas(record.lote), member: record.id });
    if (record.idem !== null) writes.push({ op: 'del', key: record.idem });
    return writes;
  }

  /** Stops the task's job if it still runs and deletes every file of its area. */
  async #removeTaskData(record: TarefaRecord): Promise<void> {
    if (!isFinal(record.estado)) {
      await this.execution
        .cancel(record)
        .catch((err: unknown) => this.#deps.log.warn({ err, tarefa: record.id }, 'could not cancel a task job'));
    }
    const area = this.#deps.storage.area(record.id);
    for (const name of [...record.entradas, ...TASK_OUTPUTS]) area.ref(name);
    await area.remove().catch((err: unknown) => this.#deps.log.error({ err, tarefa: record.id }, 'could not remove task files'));
  }

  // ---------------------------------------------------------------- batches (SPEC §7.3)

  /**
   * Records a new batch, bound to its Idempotency-Key if any, unless its principal already holds
   * MAX_LOTES_ABERTOS open ones (counted exactly: the count is guarded like every record), or
   * created MAX_LOTES_POR_HORA in the last hour (throws TooManyLotesCreatedError: 429 with
   * Retry-After). The principal is the one of SPEC §7.1: every API_KEY value shares one quota.
   */
  async createLote(lote: LoteRecord, idempotency: { readonly key: string; readonly digest: string } | null): Promise<NewLoteOutcome> {
    const abertosKey = keys.abertosDe(donoKey(lote.dono));
    const criadosKey = keys.criadosDe(donoKey(lote.dono));
    return retrying<NewLoteOutcome>(async () => {
      const [countRaw = null, criadosRaw = null] = await this.store.getMany([abertosKey, criadosKey]);
      const abertos = countRaw === null ? 0 : Number(countRaw);
      if (abertos >= this.#deps.config.maxLotesAbertos) return { ok: false, why: 'muitos-abertos' } as const;
      const criados = withOneMoreCreation(criadosRaw, lote.criadoEm, this.#deps.config.maxLotesPorHora);
      const guards: Guard[] = [
        { key: keys.lote(lote.id), value: null },
        { key: abertosKey, value: countRaw },
        { key: criadosKey, value: criadosRaw },
      ];
      const writes: Write[] = [
        { op: 'set', key: keys.lote(lote.id), value: JSON.stringify(lote) },
        { op: 'set', key: abertosKey, value: String(abertos + 1) },
        // Forgotten an hour after the last creation: by then nothing in it counts.
        { op: 'set', key: criadosKey, value: JSON.stringify(criados), ttlMs: HOUR_MS },
        { op: 'zadd', key: keys.abertos, member: lote.id, score: lote.ultimoEnvioEm },
        { op: 'zadd', key: keys.limite, member: lote.id, score: lote.criadoEm + this.#deps.config.loteMaxMs },
        { op: 'zadd', key: keys.lotesDe(donoKey(lote.dono)), member: lote.id, score: -lote.criadoEm },
      ];
      if (idempotency) {
        guards.push({ key: idempotency.key, value: null });
        writes.push({
          op: 'set',
          key: idempotency.key,
          value: JSON.stringify({ digest: idempotency.digest, lote: lote.id }),
          ttlMs: IDEMPOTENCY_TTL_MS,
        });
      }
      if (await this.store.commit(guards, writes)) return { ok: true } as const;
      if (idempotency) {
        const existing = await this.idempotencia.read(idempotency.key);
        if (existing.state !== 'none') return { ok: false, why: 'idempotencia', existing } as const;
      }
      return RETRY;
    });
  }

  /** The batch's record; with `dono`, only if it is that principal's. */
  async lote(id: string, dono?: Dono): Promise<LoteRecord | null> {
    const raw = await this.store.get(keys.lote(id));
    return owned(raw === null ? null : parse<LoteRecord>(raw), dono);
  }

  /** Several batches' records in one read (null for one that is gone); no owner check. */
  async lotes(ids: readonly string[]): Promise<(LoteRecord | null)[]> {
    const raws = await this.store.getMany(ids.map((id) => keys.lote(id)));
    return raws.map((raw) => (raw === null || raw === undefined ? null : parse<LoteRecord>(raw)));
  }

  /**
   * `fechar` (SPEC §7.3): no more files; ends now when every task has. Null when there is no such
   * batch (of `dono`'s, if given). `onlyIfIdleSince`: the idle close, only if no file came since.
   */
  async fecharLote(id: string, options: { readonly dono?: Dono; readonly onlyIfIdleSince?: number } = {}): Promise<LoteRecord | null> {
    return retrying(async () => {
      const raw = await this.store.get(keys.lote(id));
      if (raw === null) return null;
      const lote = owned(parse<LoteRecord>(raw), options.dono);
      if (lote === null) return null;
      if (lote.estado !== 'aberto') return lote;
      if (options.onlyIfIdleSince !== undefined && lote.ultimoEnvioEm > options.onlyIfIdleSince) return lote;
      const now = this.now();
      const abertos = await this.#abertosWrite(lote);
      const writes: Write[] = [
        { op: 'zrem', key: keys.abertos, member: id },
        { op: 'zrem', key: keys.limite, member: id },
        ...abertos.writes,
        ...this.#concludeIfDone({ ...lote, estado: 'processando', fechadoEm: now }, now),
      ];
      if (!(await this.store.commit([{ key: keys.lote(id), value: raw }, ...abertos.guards], writes))) return RETRY;
      return parse<LoteRecord>((await this.store.get(keys.lote(id))) ?? raw);
    });
  }

  /** The principal's open-batch count, one fewer (a batch stops being open), guarded on what was read. */
  async #abertosWrite(lote: LoteRecord): Promise<{ guards: Guard[]; writes: Write[] }> {
    const key = keys.abertosDe(donoKey(donoOf(lote)));
    const raw = await this.store.get(key);
    const fewer = Math.max(0, (raw === null ? 0 : Number(raw)) - 1);
    return {
      guards: [{ key, value: raw }],
      writes: [fewer === 0 ? { op: 'del', key } : { op: 'set', key, value: String(fewer) }],
    };
  }

  /**
   * The batch's record write, ended (`concluido`, its expiry set, its webhook queued) when it is
   * closed and every task has ended.
   */
  #concludeIfDone(lote: LoteRecord, now: number): Write[] {
    const ended = lote.concluida + lote.falhou + lote.cancelada;
    if (lote.estado !== 'processando' || ended < lote.total) return [{ op: 'set', key: keys.lote(lote.id), value: JSON.stringify(lote) }];
    const done: LoteRecord = { ...lote, estado: 'concluido', concluidoEm: now, expiraEm: now + this.ttlMs };
    return [
      { op: 'set', key: keys.lote(lote.id), value: JSON.stringify(done) },
      { op: 'zadd', key: keys.expiram, member: `l:${lote.id}`, score: done.expiraEm! },
      ...webhookWrites(done, 'lote.concluido', 'concluido', contagens(done, 0), now),
    ];
  }

  /**
   * DELETE (SPEC §7.3): unfinished tasks cancelled, every record and file removed. False when
   * unknown (or not `dono`'s). `expirado`: its retention ended (the sweep), so the season ledger
   * keeps its rows (SPEC §13); an *Apagar* removes them too.
   */
  async deleteLote(id: string, dono?: Dono, motivo: 'apagado' | 'expirado' = 'apagado'): Promise<boolean> {
    const deleted = await retrying(async () => {
      const raw = await this.store.get(keys.lote(id));
      if (raw === null) return null;
      const lote = owned(parse<LoteRecord>(raw), dono);
      if (lote === null) return null;
      const now = this.now();
      const abertos = lote.estado === 'aberto' ? await this.#abertosWrite(lote) : { guards: [], writes: [] };
      const writes: Write[] = [
        { op: 'del', key: keys.lote(id) },
        { op: 'zrem', key: keys.abertos, member: id },
        { op: 'zrem', key: keys.limite, member: id },
        { op: 'zrem', key: keys.lotesDe(donoKey(donoOf(lote))), member: id },
        { op: 'zrem', key: keys.expiram, member: `l:${id}` },
        { op: 'zadd', key: keys.apagar, member: id, score: now },
        ...abertos.writes,
      ];
      if (lote.idem) writes.push({ op: 'del', key: lote.idem });
      if (lote.estado !== 'concluido') {
        // A batch that had not ended ends cancelled: its unfinished tasks count as cancelled.
        const unfinished = lote.total - lote.concluida - lote.falhou - lote.cancelada;
        const counts: Contagens = { ...contagens(lote, 0), aguardando: 0, cancelada: lote.cancelada + unfinished };
        writes.push(...webhookWrites(lote, 'lote.cancelado', 'cancelado', counts, now));
      }
      return (await this.store.commit([{ key: keys.lote(id), value: raw }, ...abertos.guards], writes)) ? lote : RETRY;
    });
    if (deleted === null) return false;
    if (motivo === 'apagado')
      await this.#deps.safra
        ?.apagarLote(id)
        .catch((err: unknown) => this.#deps.log.warn({ err, lote: id }, 'safra: could not delete a batch'));
    await this.purgeLote(id);
    return true;
  }

  /** Removes a deleted batch's tasks, a page at a time; resumed by the sweeper after a crash. */
  async purgeLote(id: string): Promise<void> {
    for (;;) {
      const page = await this.store.range(keys.loteTarefas(id), { limit: 100 });
      if (page.length === 0) break;
      const raws = await this.store.getMany(page.map((entry) => keys.tarefa(entry.member)));
      const writes: Write[] = [];
      for (const [i, entry] of page.entries()) {
        const raw = raws[i];
        writes.push({ op: 'zrem', key: keys.loteTarefas(id), member: entry.member });
        if (!raw) continue;
        const record = parse<TarefaRecord>(raw);
        await this.#removeTaskData(record);
        writes.push(...this.#forgetTarefa(record));
      }
      await this.store.commit([], writes);
    }
    await this.store.commit(
      [],
      [
        { op: 'del', key: keys.loteTarefas(id) },
        { op: 'zrem', key: keys.apagar, member: id },
      ],
    );
  }
}
