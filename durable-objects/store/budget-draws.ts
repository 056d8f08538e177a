import { addSpend, NO_SPEND, type Spend } from "../../src/core/usage";
import type { TableSql } from "./first-use-tables";

/**
 * At the session that owns a tree's shared budget (README "Prices and budgets"): what each other
 * session of its tree last said it spent (its own model steps and its runs on other deployments
 * and agents), one row each. A session's figure only grows, so a report is kept only where it is
 * higher: a late or repeated report never lowers it, and each session counts once however often
 * it reports.
 */
export class BudgetDraws {
  constructor(readonly sql: TableSql) {}

  /** Inside a transaction: `memberId` has spent `spend` so far. */
  record(memberId: string, spend: Spend): void {
    this.sql.exec(
      `INSERT INTO budget_draws (member_id, tokens, usd) VALUES (?, ?, ?)
       ON CONFLICT (member_id) DO UPDATE SET tokens = max(tokens, excluded.tokens), usd = max(usd, excluded.usd)`,
      memberId,
      spend.tokens,
      spend.usd,
    );
  }

  /** What the tree's other sessions spent, together. */
  total(): Spend {
    if (!this.sql.exists()) return NO_SPEND;
    const row = this.sql
      .exec<{ tokens: number | null; usd: number | null }>(
        "SELECT sum(tokens) AS tokens, sum(usd) AS usd FROM budget_draws",
      )
      .toArray()[0];
    return addSpend(NO_SPEND, { tokens: row?.tokens ?? 0, usd: row?.usd ?? 0 });
  }
}
