import { addSpend, NO_SPEND, type Spend } from "../../src/core/usage";
import type { TableSql } from "./first-use-tables";

/** One session's reservation: the call it is for, what it holds, and until when at most. */
export interface Reservation {
  key: string;
  spend: Spend;
  expiresAt: number;
}

/**
 * At the session that owns a tree's budget (README "Prices and budgets"): what the model calls
 * under way in its tree reserved, one row per session (a session makes one model call at a time),
 * keyed by the session and naming the call (`<turn>.<step>`, src/agent/budget.ts). A row counts
 * against the budget until its session settles it (its call's usage is then in its spending) or
 * reserves for its next call, or until it expires: a session deleted or cut off mid-call holds
 * nothing past the longest its call could take.
 */
export class BudgetReservations {
  constructor(readonly sql: TableSql) {}

  /** The reservation `memberId` holds, expired or not. */
  of(memberId: string): Reservation | undefined {
    if (!this.sql.exists()) return undefined;
    const row = this.sql
      .exec<{ step_key: string; tokens: number; usd: number; expires_at: number }>(
        "SELECT step_key, tokens, usd, expires_at FROM budget_reservations WHERE member_id = ?",
        memberId,
      )
      .toArray()[0];
    return (
      row && { key: row.step_key, spend: { tokens: row.tokens, usd: row.usd }, expiresAt: row.expires_at }
    );
  }

  /** Inside a transaction: `memberId` holds `reservation` now (in place of any before). */
  hold(memberId: string, reservation: Reservation): void {
    this.sql.exec(
      `INSERT INTO budget_reservations (member_id, step_key, tokens, usd, expires_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (member_id) DO UPDATE SET step_key = excluded.step_key, tokens = excluded.tokens,
         usd = excluded.usd, expires_at = excluded.expires_at`,
      memberId,
      reservation.key,
      reservation.spend.tokens,
      reservation.spend.usd,
      reservation.expiresAt,
    );
  }

  /** Inside a transaction: `memberId` holds nothing (only where it holds `key`, when given). */
  release(memberId: string, key?: string): void {
    if (!this.sql.exists()) return;
    if (key === undefined) this.sql.exec("DELETE FROM budget_reservations WHERE member_id = ?", memberId);
    else this.sql.exec("DELETE FROM budget_reservations WHERE member_id = ? AND step_key = ?", memberId, key);
  }

  /** What the reservations unexpired `at` hold together, but `except`'s. */
  held(at: number, except?: string): Spend {
    if (!this.sql.exists()) return NO_SPEND;
    const row = this.sql
      .exec<{ tokens: number | null; usd: number | null; n: number }>(
        `SELECT sum(tokens) AS tokens, sum(usd) AS usd, count(*) AS n FROM budget_reservations
         WHERE expires_at > ? AND member_id IS NOT ?`,
        at,
        except ?? null,
      )
      .toArray()[0];
    return addSpend(NO_SPEND, { tokens: row?.tokens ?? 0, usd: row?.usd ?? 0 });
  }

  /** How many reservations are unexpired `at`. */
  outstanding(at: number): number {
    if (!this.sql.exists()) return 0;
    return (
      this.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM budget_reservations WHERE expires_at > ?", at)
        .toArray()[0]?.n ?? 0
    );
  }
}
