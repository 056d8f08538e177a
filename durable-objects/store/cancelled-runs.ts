import type { TableSql } from "./first-use-tables";

/**
 * Tombstones of one-shot runs cancelled before their child existed (delegation/one-shot/
 * one-shot-child.ts): a `cancel-run` that outran the child's `init` is kept here, with the parent
 * that sent it, and the `init` of that run then reports `aborted` without running its prompt.
 */
export class CancelledRuns {
  constructor(readonly sql: TableSql) {}

  /** Inside the delivery transaction: `runId` was cancelled by `parent` (the first cancel is kept). */
  add(runId: string, parent: string): void {
    this.sql.exec(
      "INSERT INTO cancelled_runs (run_id, parent) VALUES (?, ?) ON CONFLICT DO NOTHING",
      runId,
      parent,
    );
  }

  /** The parent that cancelled `runId` before its child existed, if one did. */
  parentOf(runId: string): string | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    return this.sql
      .exec<{ parent: string }>("SELECT parent FROM cancelled_runs WHERE run_id = ?", runId)
      .toArray()[0]?.parent;
  }
}
