import type { TableSql } from "./first-use-tables";
import { ReadMemo } from "./read-memo";

/**
 * Small named facts of one session that are not worth a table each: `draining` (admission closed
 * while a drain runs), `first_run_id` (a continuable child's first epoch, for an idempotent
 * `init`), `epochs` (how many epochs ended) and `cancelled:<runId>` tombstones (a cancel that
 * outran the child's creation).
 */
export class Flags {
  /** Reads, until the next write of the table (read-memo.ts). */
  readonly memo = new ReadMemo();

  constructor(readonly sql: TableSql) {}

  get(name: string): string | undefined {
    return this.memo.read(
      `get:${name}`,
      () =>
        this.sql.exec<{ value: string }>("SELECT value FROM flags WHERE name = ?", name).toArray()[0]?.value,
      undefined,
    );
  }

  set(name: string, value: string): void {
    this.memo.changed();
    this.sql.exec(
      "INSERT INTO flags (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      name,
      value,
    );
  }

  /** Sets a flag only if it is absent (first writer wins). */
  add(name: string, value: string): void {
    this.memo.changed();
    this.sql.exec("INSERT INTO flags (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING", name, value);
  }

  delete(name: string): void {
    this.memo.changed();
    this.sql.exec("DELETE FROM flags WHERE name = ?", name);
  }
}
