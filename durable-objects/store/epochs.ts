import type { TableSql } from "./first-use-tables";
import { ReadMemo } from "./read-memo";
import type { SettledEnvelope } from "../../src/contract/envelope";

/**
 * Continuable epochs as a parent sees them. A child can settle (and its notice arrive) before
 * the parent recorded that epoch's `subagent/start`: such a notice waits here until the start is
 * published, so `subagent/start` always precedes `subagent/end`.
 */
export class Epochs {
  /** Reads of the hot polls, until the next write of the table (read-memo.ts). */
  readonly memo = new ReadMemo();

  constructor(readonly sql: TableSql) {}

  reserve(runId: string, childId: string): void {
    this.memo.changed();
    this.sql.exec(
      "INSERT INTO epochs (run_id, child_id, state) VALUES (?, ?, 'starting') ON CONFLICT DO NOTHING",
      runId,
      childId,
    );
  }

  state(runId: string): "starting" | "published" | "ended" | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    const row = this.sql
      .exec<{ state: string }>("SELECT state FROM epochs WHERE run_id = ?", runId)
      .toArray()[0];
    return row?.state as "starting" | "published" | "ended" | undefined;
  }

  /** starting -> published, once; returns a notice that arrived early, if any. */
  publish(runId: string): { published: boolean; early?: SettledEnvelope } {
    this.memo.changed();
    // read the held notice first: RETURNING would show the row after it was cleared
    const row = this.sql
      .exec<{ pending_notice: string | null }>(
        "SELECT pending_notice FROM epochs WHERE run_id = ? AND state = 'starting'",
        runId,
      )
      .toArray()[0];
    if (!row) return { published: false };
    this.sql.exec("UPDATE epochs SET state = 'published', pending_notice = NULL WHERE run_id = ?", runId);
    return row.pending_notice
      ? { published: true, early: JSON.parse(row.pending_notice) }
      : { published: true };
  }

  holdEarly(notice: SettledEnvelope): void {
    this.memo.changed();
    this.sql.exec(
      `INSERT INTO epochs (run_id, child_id, state, pending_notice) VALUES (?, ?, 'starting', ?)
       ON CONFLICT (run_id) DO UPDATE SET pending_notice = excluded.pending_notice`,
      notice.runId,
      notice.from,
      JSON.stringify(notice),
    );
  }

  end(runId: string): boolean {
    this.memo.changed();
    return (
      this.sql
        .exec(
          "UPDATE epochs SET state = 'ended' WHERE run_id = ? AND state = 'published' RETURNING run_id",
          runId,
        )
        .toArray().length > 0
    );
  }

  forget(runId: string): void {
    this.memo.changed();
    this.sql.exec("DELETE FROM epochs WHERE run_id = ? AND state = 'starting'", runId);
  }

  /** Children of epochs published and not ended: their settled notice is still to come. */
  publishedChildren(): string[] {
    return this.memo.read("publishedChildren", () => this.#publishedChildren(), []);
  }

  #publishedChildren(): string[] {
    return this.sql
      .exec<{ child_id: string }>("SELECT DISTINCT child_id FROM epochs WHERE state = 'published'")
      .toArray()
      .map((r) => r.child_id);
  }

  /** Starts reserved but never published (the object died mid-start). */
  starting(): { runId: string; childId: string }[] {
    return this.memo.read("starting", () => this.#starting(), []);
  }

  #starting(): { runId: string; childId: string }[] {
    return this.sql
      .exec<{ run_id: string; child_id: string }>(
        "SELECT run_id, child_id FROM epochs WHERE state = 'starting'",
      )
      .toArray()
      .map((r) => ({ runId: r.run_id, childId: r.child_id }));
  }
}
