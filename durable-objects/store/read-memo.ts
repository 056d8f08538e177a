/**
 * Reads of one store kept until that store's next write. The parts of a session ask on every pass
 * of the drive loop whether they owe work (unpublished starts, far-side runs, epochs, the inbox),
 * and most of the time nothing changed since they last asked: a store answers those questions
 * from memory until one of its own write methods runs (`changed()`), and SessionStores forgets
 * every memo when a transaction rolls back (a read inside it may have seen writes that are gone).
 * Every write to the store's tables goes through its methods. An answer is shared by the callers
 * until then, and they only read it. (It is not frozen: V8 iterates and slices frozen arrays on a
 * slow path, which cost more CPU per delegation than the queries saved; bench:profile measured it.)
 */
export class ReadMemo {
  readonly #answers = new Map<string, { value: unknown }>();
  #empty = false;

  /**
   * The store's tables were created by this instance a moment ago: until the store's first write,
   * every read has its empty answer without asking SQLite. (A brand-new child asks every part
   * whether it owes work on its first pass; each of those would be a statement prepared and run
   * once, on tables known to be empty.)
   */
  startEmpty(): void {
    this.#empty = true;
  }

  /** A write of the store (or a rollback): every remembered answer is stale. */
  changed(): void {
    this.#answers.clear();
    this.#empty = false;
  }

  /** The answer to `key` this memo would give without asking (`empty` while the tables are known empty), if any. */
  known<T>(key: string, empty: T): { value: T } | undefined {
    if (this.#empty) return { value: empty };
    return this.#answers.get(key) as { value: T } | undefined;
  }

  /** Remembers `value` as the answer to `key` until the next write (a write that knows what a read would say). */
  remember(key: string, value: unknown): void {
    this.#answers.set(key, { value });
  }

  /** `query`'s answer, remembered until the next write; `empty` while the tables are known empty. */
  read<T>(key: string, query: () => T, empty: T): T {
    if (this.#empty) return empty;
    const hit = this.#answers.get(key);
    if (hit) return hit.value as T;
    const value = query();
    this.#answers.set(key, { value });
    return value;
  }
}
