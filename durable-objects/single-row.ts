/**
 * A JSON document kept in a single-row table (`id = 1` by CHECK): the session header (written
 * once) and the turn loop state (rewritten by every step inside the step's transaction).
 */
export class SingleRow<T> {
  constructor(
    readonly sql: SqlStorage,
    readonly table: "header" | "loop",
  ) {}

  get(): T | undefined {
    const row = this.sql.exec<{ body: string }>(`SELECT body FROM ${this.table} WHERE id = 1`).toArray()[0];
    return row ? (JSON.parse(row.body) as T) : undefined;
  }

  set(value: T): void {
    this.sql.exec(
      `INSERT INTO ${this.table} (id, body) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body`,
      JSON.stringify(value),
    );
  }
}
