import type { HostSql } from "../host/port";
/**
 * A JSON document kept in a single-row table (`id = 1` by CHECK): the session header (written
 * once) and the turn loop state (rewritten by every step inside the step's transaction). The
 * parsed value is cached: every write goes through `set`, and a rolled-back transaction calls
 * `forget`, so the cache never disagrees with the row.
 */
export class SingleRow<T> {
  #cached: { value: T | undefined } | undefined;

  constructor(
    readonly sql: HostSql,
    readonly table: "header" | "loop",
  ) {}

  get(): T | undefined {
    if (!this.#cached) {
      const row = this.sql.exec<{ body: string }>(`SELECT body FROM ${this.table} WHERE id = 1`).toArray()[0];
      this.#cached = { value: row ? (JSON.parse(row.body) as T) : undefined };
    }
    return this.#cached.value;
  }

  /** The table was created just now: there is no row yet. */
  startAbsent(): void {
    this.#cached = { value: undefined };
  }

  set(value: T): void {
    this.sql.exec(
      `INSERT INTO ${this.table} (id, body) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body`,
      JSON.stringify(value),
    );
    this.#cached = { value };
  }

  forget(): void {
    this.#cached = undefined;
  }
}
