import type { TableSql } from "./first-use-tables";

/**
 * What makes a continuable start idempotent (semantics.md §6.2, §10.5), one row per child such a
 * start named (a one-shot start keeps the same in its run row: runs.ts, `call_key` and
 * `request_key`). A model's tool call (`call_key`) re-run after a crash gets the child it started
 * and, once that start was published, the child's message id; a caller-reserved child id keeps
 * the request it was started with (`request_key`) and its first epoch's run id, so the same request
 * again is a retry of that start and another one is `DUPLICATE_CHILD`. Written with the start's
 * reservation, before the child exists; each half is forgotten when its start fails for good.
 */
export class ContinuableStarts {
  constructor(readonly sql: TableSql) {}

  /** The start a tool call made: its child, and the child's message id once it was published. */
  byCall(callKey: string): { childId: string; messageId: string | undefined } | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    const row = this.sql
      .exec<{ child_id: string; message_id: string | null }>(
        "SELECT child_id, message_id FROM continuable_starts WHERE call_key = ?",
        callKey,
      )
      .toArray()[0];
    return row ? { childId: row.child_id, messageId: row.message_id ?? undefined } : undefined;
  }

  /** The tool call that started `childId`, while its row keeps it. */
  callOf(childId: string): string | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    return (
      this.sql
        .exec<{ call_key: string | null }>(
          "SELECT call_key FROM continuable_starts WHERE child_id = ?",
          childId,
        )
        .toArray()[0]?.call_key ?? undefined
    );
  }

  /** The request a caller-reserved child id was started with, and that start's first run id. */
  requestOf(childId: string): { requestKey: string; runId: string | undefined } | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    const row = this.sql
      .exec<{ request_key: string; run_id: string | null }>(
        "SELECT request_key, run_id FROM continuable_starts WHERE child_id = ? AND request_key IS NOT NULL",
        childId,
      )
      .toArray()[0];
    return row ? { requestKey: row.request_key, runId: row.run_id ?? undefined } : undefined;
  }

  /** Inside the reserving transaction: the tool call `callKey` starts `childId` (a call names one child). */
  reserveCall(callKey: string, childId: string): void {
    this.sql.exec(
      "UPDATE continuable_starts SET call_key = NULL, message_id = NULL WHERE call_key = ? AND child_id != ?",
      callKey,
      childId,
    );
    this.sql.exec(
      `INSERT INTO continuable_starts (child_id, call_key) VALUES (?, ?)
       ON CONFLICT (child_id) DO UPDATE SET call_key = excluded.call_key`,
      childId,
      callKey,
    );
    this.#prune();
  }

  /** Inside the publishing transaction: the child's message id, for a re-run of the call. */
  publishCall(callKey: string, messageId: string): void {
    this.sql.exec("UPDATE continuable_starts SET message_id = ? WHERE call_key = ?", messageId, callKey);
  }

  /** The call's start failed: a re-run of the call starts anew. */
  forgetCall(callKey: string): void {
    this.sql.exec(
      "UPDATE continuable_starts SET call_key = NULL, message_id = NULL WHERE call_key = ?",
      callKey,
    );
    this.#prune();
  }

  /** Inside the reserving transaction: the request `childId` is started with, and its first run id. */
  reserveRequest(childId: string, requestKey: string, runId: string): void {
    this.sql.exec(
      `INSERT INTO continuable_starts (child_id, request_key, run_id) VALUES (?, ?, ?)
       ON CONFLICT (child_id) DO UPDATE SET request_key = excluded.request_key, run_id = excluded.run_id`,
      childId,
      requestKey,
      runId,
    );
  }

  /** The start refused for good: the id is free again. */
  forgetRequest(childId: string): void {
    this.sql.exec(
      "UPDATE continuable_starts SET request_key = NULL, run_id = NULL WHERE child_id = ?",
      childId,
    );
    this.#prune();
  }

  /** A row that no longer keeps either half is gone. */
  #prune(): void {
    this.sql.exec("DELETE FROM continuable_starts WHERE call_key IS NULL AND request_key IS NULL");
  }
}
