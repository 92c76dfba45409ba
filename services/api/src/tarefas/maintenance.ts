// The passes the housekeeping runs on every API process (housekeeping.ts): the reconciler, which
// records ends whose hint was missed and stops tasks past JOB_TIMEOUT_MS, and the sweep, which
// deletes what has expired, closes idle batches and resumes interrupted batch deletions. Each is
// safe on several replicas at once: every change goes through the service's guarded commits.
import { TELL_ENDS_MS } from '@censo/shared';
import { isFinal } from './model.js';
import type { TarefasService } from './service.js';
import { keys } from './store.js';

/** An open batch with no new file for this long closes itself (SPEC §7.3). */
export const LOTE_IDLE_MS = 24 * 3_600_000;
/**
 * The reconciler's scan of waiting tasks runs at most this many passes apart once it keeps finding
 * nothing to record (every end then came by its hint): a backlog of waiting tasks costs a page of
 * job reads every 8 s rather than every 2 s (issue 47: no polling where Redis notifies), and an end
 * whose hint was missed (an API restart, a failover) is still recorded within 8 s of becoming the
 * reconciler's (MISSED_END_MS after it ended) at the default pace.
 */
export const MAX_QUIET_SKIP = 3;
/**
 * An end is the reconciler's once it is this old (by its job's clock, as start times are): before
 * that its worker's tell is on its way, at most TELL_ENDS_MS behind (issue 55). A scan that
 * recorded those raced the tell it was there to back up, and every such end held the scan at every
 * pass while a batch ran: a second's worth of untold ends is always there then.
 */
export const MISSED_END_MS = 3 * TELL_ENDS_MS;

export class Maintenance {
  readonly #service: TarefasService;
  readonly #jobTimeoutMs: number;
  /** The reconciler's place in the unfinished tasks (a page a pass, round-robin). */
  #reconcileAfter = -Infinity;
  /** Scans in a row that recorded nothing, and passes left before the next scan. */
  #quietScans = 0;
  #skip = 0;

  constructor(service: TarefasService, jobTimeoutMs: number) {
    this.#service = service;
    this.#jobTimeoutMs = jobTimeoutMs;
  }

  /**
   * Looks at unfinished tasks a page at a time, round-robin: records the end of jobs whose hint
   * was missed, and stops tasks running past JOB_TIMEOUT_MS (the synchronous route's 504).
   */
  async reconcile(): Promise<void> {
    // Start times come from the executor (the job's own clock), so they are compared with it.
    const now = Date.now();
    // Jobs a rollback left for workers no longer there go back to the live ones first.
    await this.#service.execution.rescue?.();
    const running = await this.#service.execution.running();
    for (const [id, startedAt] of running) {
      if (startedAt + this.#jobTimeoutMs >= now) continue;
      const record = await this.#service.tarefa(id);
      if (record === null || isFinal(record.estado)) continue;
      await this.#service.finish(id, { state: 'failed', why: 'timeout', startedAt, finishedAt: now });
      await this.#service.execution.cancel(record).catch(() => undefined);
    }
    if (this.#skip > 0) {
      this.#skip--;
      return;
    }
    const page = await this.#service.store.range(keys.pendentes, { after: this.#reconcileAfter, limit: 100 });
    this.#reconcileAfter = page.length < 100 ? -Infinity : page[page.length - 1]!.score;
    // The page's tasks told in one tick: one commit reads their records in one MGET and their jobs
    // in one look per group (the group job's state once, not once per task: issue 55, that look,
    // a script of four ZSCOREs and two LPOSes, was the first Redis command per file).
    // Ends younger than MISSED_END_MS are left to their tell: found fresh, a task counts as waiting.
    const late = { endedBefore: now - MISSED_END_MS };
    const told = await Promise.all(
      page.filter(({ member: id }) => !running.has(id)).map(({ member: id }) => this.#service.finish(id, undefined, late)),
    );
    const recorded = told.filter(Boolean).length;
    // Back off while scans find only tasks that wait (1, 2, 3 passes skipped); at once to every
    // pass when one recorded an end, since hints are being missed.
    this.#quietScans = recorded > 0 || page.length === 0 ? 0 : this.#quietScans + 1;
    this.#skip = Math.min(MAX_QUIET_SKIP, this.#quietScans);
  }

  /** Deletes what has expired (SPEC §7.1 retention), closes idle batches, resumes interrupted batch deletions. */
  async sweep(): Promise<void> {
    const now = this.#service.now();
    for (const { member } of await this.#service.store.range(keys.expiram, { upTo: now, limit: 100 })) {
      const id = member.slice(2);
      if (member.startsWith('t:')) {
        if (!(await this.#service.deleteTarefa(id))) await this.#service.store.commit([], [{ op: 'zrem', key: keys.expiram, member }]);
      } else if (!(await this.#service.deleteLote(id, undefined, 'expirado'))) {
        await this.#service.store.commit([], [{ op: 'zrem', key: keys.expiram, member }]);
      }
    }
    const idleSince = now - LOTE_IDLE_MS;
    for (const { member } of await this.#service.store.range(keys.abertos, { upTo: idleSince, limit: 100 })) {
      if ((await this.#service.fecharLote(member, { onlyIfIdleSince: idleSince })) === null) {
        await this.#service.store.commit([], [{ op: 'zrem', key: keys.abertos, member }]);
      }
    }
    // LOTE_MAX_HOURS after its creation a batch closes whatever its uploads (SPEC §7.3), so no
    // result outlives LOTE_MAX_HOURS + RESULT_TTL_HOURS.
    for (const { member } of await this.#service.store.range(keys.limite, { upTo: now, limit: 100 })) {
      if ((await this.#service.fecharLote(member)) === null)
        await this.#service.store.commit([], [{ op: 'zrem', key: keys.limite, member }]);
    }
    for (const { member } of await this.#service.store.range(keys.apagar, { upTo: now - 60_000, limit: 10 }))
      await this.#service.purgeLote(member);
  }
}
