/**
 * Reads of one store kept until that store's next write. The parts of a session ask on every pass
 * of the drive loop whether they owe work (unpublished starts, far-side runs, epochs, the inbox),
 * and most of the time nothing changed since they last asked: a store answers those questions
 * from memory until one of its own write methods runs (`changed()`), and SessionStores forgets
 * every memo when a transaction rolls back (a read inside it may have seen writes that are gone).
 * Every write to the store's tables goes through its methods. Answers are frozen: a caller that
 * tried to change a shared answer would throw instead of corrupting the next reader's.
 */
export class ReadMemo {
  #version = 0;
  readonly #answers = new Map<string, { version: number; value: unknown }>();

  /** A write of the store (or a rollback): every remembered answer is stale. */
  changed(): void {
    this.#version++;
    this.#answers.clear();
  }

  read<T>(key: string, query: () => T): T {
    const hit = this.#answers.get(key);
    if (hit && hit.version === this.#version) return hit.value as T;
    const value = query();
    if (typeof value === "object" && value !== null) Object.freeze(value);
    this.#answers.set(key, { version: this.#version, value });
    return value;
  }
}
