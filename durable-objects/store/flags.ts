import type { TableSql } from "./first-use-tables";
import { ReadMemo } from "./read-memo";

/**
 * The single named facts `flags` holds, one value each (a fact about one child or run has a table
 * of its own: schema.ts, migration 14).
 */
export type FlagName =
  /** Admission closed while a drain runs: `self`, or `parent:<id>` (delegation/continuable/drains.ts). */
  | "draining"
  /** A continuable child's first epoch, for an idempotent `init` (continuable-child.ts). */
  | "first_run_id"
  /** How many epochs of a continuable child ended (continuable-child.ts). */
  | "epochs"
  /** At a tree's root: how many sessions below its children took a place in its tree (tree-slots.ts). */
  | "tree-slots"
  /** The key of the model call this session holds a budget reservation for (session/tree-budget.ts). */
  | "budget:held"
  /** The tokens this session's own model steps used (usage-totals.ts). */
  | "usage"
  /** The part of `usage` its compactions' summarizing calls used (usage-totals.ts). */
  | "usage:compaction"
  /**
   * A compaction a caller asked for (POST …/compact), not yet done: the summarizing calls made for
   * it while the session was idle (compaction-requests.ts).
   */
  | "compaction:requested"
  /** The tokens the one-shot runs it started reported with their results (usage-totals.ts). */
  | "usage:runs"
  /** The part of `usage:runs` its runs on other deployments and agents reported (usage-totals.ts). */
  | "usage:remote"
  /** What its local children reported of their subtrees (usage-totals.ts). */
  | "usage:below"
  /** The part of its subtree's usage it has reported to its parent (usage-totals.ts). */
  | "usage:reported"
  /** The session is being deleted: how and since when, JSON (session/deletion.ts). */
  | "deleting"
  /** How far its spans were exported to the OTLP collector, JSON (src/trace/export.ts). */
  | "trace:cursor"
  /** The export's failed tries of its current batch and when the next is due, JSON (src/trace/export-retry.ts). */
  | "trace:retry"
  /** How many of its spans the export dropped: refused, rejected, or past its bounds (src/trace/export.ts). */
  | "trace:dropped";

/** Small named facts of one session that are not worth a table each (FlagName lists them). */
export class Flags {
  /** Reads, until the next write of the table (read-memo.ts). */
  readonly memo = new ReadMemo();

  constructor(readonly sql: TableSql) {}

  get(name: FlagName): string | undefined {
    return this.memo.read(
      `get:${name}`,
      () =>
        this.sql.exec<{ value: string }>("SELECT value FROM flags WHERE name = ?", name).toArray()[0]?.value,
      undefined,
    );
  }

  set(name: FlagName, value: string): void {
    this.memo.changed();
    this.sql.exec(
      "INSERT INTO flags (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      name,
      value,
    );
  }

  delete(name: FlagName): void {
    this.memo.changed();
    this.sql.exec("DELETE FROM flags WHERE name = ?", name);
  }
}
