// The embedded store: records in this process's memory. Every operation completes synchronously
// inside its promise, so a commit's guards and writes see no other request in between.
import type { Guard, RangeQuery, Scored, TarefaStore, Write } from './store.js';

interface Entry {
  readonly value: string;
  readonly expiresAt: number | null;
}

/** A sorted set: members by score, then by member, as Redis orders them. */
class SortedSet {
  readonly #scores = new Map<string, number>();
  #sorted: Scored[] | null = [];

  get size(): number {
    return this.#scores.size;
  }

  add(member: string, score: number): void {
    this.#scores.set(member, score);
    this.#sorted = null;
  }

  remove(member: string): void {
    if (this.#scores.delete(member)) this.#sorted = null;
  }

  range({ after = -Infinity, from, upTo = Infinity, limit }: RangeQuery): Scored[] {
    this.#sorted ??= [...this.#scores]
      .map(([member, score]) => ({ member, score }))
      .sort((a, b) => a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
    const sorted = this.#sorted;
    // First index above `after` and from `from` (binary search), then up to `limit` within `upTo`.
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const score = sorted[mid]!.score;
      if (from === undefined ? score > after : score >= from && score > after) hi = mid;
      else lo = mid + 1;
    }
    const out: Scored[] = [];
    for (let i = lo; i < sorted.length && out.length < limit && sorted[i]!.score <= upTo; i++) out.push(sorted[i]!);
    return out;
  }
}

export function createMemoryStore(now: () => number = Date.now): TarefaStore {
  const values = new Map<string, Entry>();
  const sets = new Map<string, SortedSet>();
  let writesSincePurge = 0;

  const read = (key: string): string | null => {
    const entry = values.get(key);
    if (!entry) return null;
    if (entry.expiresAt !== null && entry.expiresAt <= now()) {
      values.delete(key);
      return null;
    }
    return entry.value;
  };

  /** Keys with a lifetime (idempotency records) are dropped when read late, and swept now and then. */
  const purgeExpired = (): void => {
    const at = now();
    for (const [key, entry] of values) if (entry.expiresAt !== null && entry.expiresAt <= at) values.delete(key);
  };

  const apply = (write: Write): void => {
    switch (write.op) {
      case 'set':
        values.set(write.key, { value: write.value, expiresAt: write.ttlMs === undefined ? null : now() + write.ttlMs });
        break;
      case 'del':
        values.delete(write.key);
        sets.delete(write.key);
        break;
      case 'zadd': {
        let set = sets.get(write.key);
        if (!set) sets.set(write.key, (set = new SortedSet()));
        set.add(write.member, write.score);
        break;
      }
      case 'zrem': {
        const set = sets.get(write.key);
        set?.remove(write.member);
        if (set?.size === 0) sets.delete(write.key);
        break;
      }
    }
  };

  return {
    kind: 'memory',
    async get(key) {
      return read(key);
    },
    async getMany(keys) {
      return keys.map(read);
    },
    async commit(guards: readonly Guard[], writes: readonly Write[]) {
      if (!guards.every((guard) => read(guard.key) === guard.value)) return false;
      for (const write of writes) apply(write);
      if (++writesSincePurge >= 1_000) {
        writesSincePurge = 0;
        purgeExpired();
      }
      return true;
    },
    async range(key, query) {
      return sets.get(key)?.range(query) ?? [];
    },
    async count(key) {
      return sets.get(key)?.size ?? 0;
    },
  };
}
