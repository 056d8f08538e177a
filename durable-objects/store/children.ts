import type { TableSql } from "./first-use-tables";
/**
 * The children a session owns, one-shot and continuable, with their ownership state and the
 * continuable epoch they run for this parent (semantics.md §6). Rows are written with the run or
 * epoch that starts the child, before the child exists.
 */
export interface ChildRow {
  childId: string;
  provider: string;
  mode: "one-shot" | "continuable";
  label: string | null;
  createdAt: number;
  state: "owned" | "released";
  epochRunId: string | null;
}

export class Children {
  constructor(readonly sql: TableSql) {}

  get(childId: string): ChildRow | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    return this.all().find((c) => c.childId === childId);
  }

  /** Every child ever owned, in `createdAt`-then-id order. */
  all(): ChildRow[] {
    if (!this.sql.exists()) return []; // not created yet: empty
    return this.sql
      .exec<{
        child_id: string;
        provider: string;
        mode: string;
        label: string | null;
        created_at: number;
        state: string;
        epoch_run_id: string | null;
      }>(
        "SELECT child_id, provider, mode, label, created_at, state, epoch_run_id FROM children ORDER BY created_at, child_id",
      )
      .toArray()
      .map((r) => ({
        childId: r.child_id,
        provider: r.provider,
        mode: r.mode as ChildRow["mode"],
        label: r.label,
        createdAt: r.created_at,
        state: r.state as ChildRow["state"],
        epochRunId: r.epoch_run_id,
      }));
  }

  /** Ownership of a continuable child for one epoch (acquired on every parent-originated delivery). */
  ownEpoch(childId: string, runId: string | null): void {
    if (runId === null) this.sql.exec("UPDATE children SET state = 'owned' WHERE child_id = ?", childId);
    else
      this.sql.exec(
        "UPDATE children SET state = 'owned', epoch_run_id = ? WHERE child_id = ?",
        runId,
        childId,
      );
  }

  setState(childId: string, state: "owned" | "released"): void {
    this.sql.exec("UPDATE children SET state = ? WHERE child_id = ?", state, childId);
  }

  /** Releases a continuable child only if the settled epoch is its current one. */
  releaseEpoch(childId: string, runId: string): void {
    this.sql.exec(
      "UPDATE children SET state = 'released' WHERE child_id = ? AND epoch_run_id = ?",
      childId,
      runId,
    );
  }

  count(): number {
    if (!this.sql.exists()) return 0; // not created yet: empty
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM children").one().n;
  }

  ownedContinuable(): string[] {
    if (!this.sql.exists()) return []; // not created yet: empty
    return this.sql
      .exec<{ child_id: string }>(
        "SELECT child_id FROM children WHERE state = 'owned' AND mode = 'continuable' ORDER BY created_at, child_id",
      )
      .toArray()
      .map((r) => r.child_id);
  }

  has(childId: string): boolean {
    if (!this.sql.exists()) return false; // not created yet: empty
    return this.sql.exec("SELECT 1 FROM children WHERE child_id = ?", childId).toArray().length > 0;
  }

  own(
    childId: string,
    provider: string,
    mode: "one-shot" | "continuable",
    label: string | undefined,
    createdAt: number,
  ): void {
    this.sql.exec(
      "INSERT INTO children (child_id, provider, mode, label, created_at, state) VALUES (?, ?, ?, ?, ?, 'owned')",
      childId,
      provider,
      mode,
      label ?? null,
      createdAt,
    );
  }

  release(childId: string): void {
    this.sql.exec("UPDATE children SET state = 'released' WHERE child_id = ?", childId);
  }

  forget(childId: string): void {
    this.sql.exec("DELETE FROM children WHERE child_id = ?", childId);
  }

  ownedCount(): number {
    if (!this.sql.exists()) return 0; // not created yet: empty
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM children WHERE state = 'owned'").one().n;
  }
}
