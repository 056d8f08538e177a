import type { TableSql } from "./first-use-tables";

/** A continuable child's current epoch: the one row of `activation` (none while it is settled). */
export interface ActivationRow {
  epoch: number;
  runId: string;
  provider: string;
  /** The log position its epoch began at: its outcome is read from the log from here. */
  startedSeq: number;
}

/**
 * The `activation` table of a continuable child (semantics.md §6.1): at most one row, present
 * while an epoch runs and deleted in the transaction that writes its settlement notice. Running,
 * waiting and settled are derived from it and the rest of the durable state
 * (delegation/continuable/continuable-child.ts).
 */
export class Activation {
  constructor(readonly sql: TableSql) {}

  get(): ActivationRow | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: no epoch ever ran here
    const row = this.sql
      .exec<{ epoch: number; run_id: string; provider: string; started_seq: number }>(
        "SELECT epoch, run_id, provider, started_seq FROM activation WHERE id = 1",
      )
      .toArray()[0];
    return row
      ? { epoch: row.epoch, runId: row.run_id, provider: row.provider, startedSeq: row.started_seq }
      : undefined;
  }

  /** Inside a transaction: an epoch begins (there is none running). */
  begin(row: ActivationRow): void {
    this.sql.exec(
      "INSERT INTO activation (id, epoch, run_id, provider, started_seq) VALUES (1, ?, ?, ?, ?)",
      row.epoch,
      row.runId,
      row.provider,
      row.startedSeq,
    );
  }

  /** Inside the transaction that writes the epoch's settlement notice: it ends. */
  end(): void {
    this.sql.exec("DELETE FROM activation WHERE id = 1");
  }
}
