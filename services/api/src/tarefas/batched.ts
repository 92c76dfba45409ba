// Work that arrives while the previous commit is under way goes in the next one, `max` items at
// most: a state's burst ends tasks faster than one guarded commit each can follow (TarefasService
// records its tasks' ends so). Each caller's promise settles with the commit that took its item,
// with what that commit returned.

interface Pending<T, R> {
  readonly item: T;
  resolve(value: R): void;
  reject(err: unknown): void;
}

export class Batched<T, R = void> {
  readonly #commit: (items: readonly T[]) => Promise<R>;
  readonly #max: number;
  readonly #pending: Pending<T, R>[] = [];
  #running = false;

  constructor(commit: (items: readonly T[]) => Promise<R>, max: number) {
    this.#commit = commit;
    this.#max = max;
  }

  add(item: T): Promise<R> {
    const done = new Promise<R>((resolve, reject) => this.#pending.push({ item, resolve, reject }));
    if (!this.#running) void this.#run();
    return done;
  }

  async #run(): Promise<void> {
    this.#running = true;
    // Items told together, one after the other in one tick (a group's ends), go in one commit.
    await Promise.resolve();
    try {
      while (this.#pending.length > 0) {
        const taken = this.#pending.splice(0, this.#max);
        try {
          const value = await this.#commit(taken.map((pending) => pending.item));
          for (const pending of taken) pending.resolve(value);
        } catch (err) {
          for (const pending of taken) pending.reject(err);
        }
      }
    } finally {
      this.#running = false;
    }
  }
}
