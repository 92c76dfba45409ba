// The strict bound on tasks waiting (MAX_QUEUED_TAREFAS, SPEC §7.5), per replica: uploads
// admitted but not yet queued count with the tasks waiting.
/**
 * Uploads admitted by this replica whose task is not in the queue yet. The backlog check counts
 * them with the tasks waiting, so uploads that arrive together cannot all pass a check that none
 * of them has reached the queue yet (SPEC §7.5: a strict bound per replica).
 */
export class AdmissionCount {
  #admitted = 0;

  get current(): number {
    return this.#admitted;
  }

  /** Counts one admission until `release` (idempotent) is called. */
  hold(): () => void {
    this.#admitted++;
    let held = true;
    return () => {
      if (held) this.#admitted--;
      held = false;
    };
  }
}
