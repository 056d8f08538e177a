import type { Spend } from "../core/usage";

/**
 * A session's budget (README "Prices and budgets"): tokens (input plus output) and/or US dollars.
 * A tree shares one: the session created with it owns it, and every session below draws from
 * the same remainder (durable-objects/session/tree-budget.ts keeps the figures).
 */

export interface BudgetLimit {
  tokens?: number;
  usd?: number;
}

export interface BudgetState {
  limit: BudgetLimit;
  /** What counts against it so far: the whole tree's spending, as far as this session knows. */
  used: Spend;
  /** The budget is its tree's (this session is not the one created with it). */
  shared: boolean;
}

/** What a session's budget counts, for the turn driver (before each model call). */
export interface BudgetLedger {
  /** The budget and what counts against it now; undefined when the session has none. */
  state(): BudgetState | undefined;
  /**
   * Brings the figure up to date and reports this session's own spending (a session below the
   * budget's owner asks the owner); never throws, and a failure leaves the last figure.
   */
  sync(): Promise<void>;
}

/** Why the budget takes no more model calls (`BUDGET_EXCEEDED: …`), or undefined while some is left. */
export function budgetSpent(state: BudgetState | undefined): string | undefined {
  if (!state) return undefined;
  const whose = state.shared ? "its tree's" : "the session's";
  const { limit, used } = state;
  if (limit.tokens !== undefined && used.tokens >= limit.tokens)
    return `BUDGET_EXCEEDED: ${whose} token budget of ${limit.tokens} is spent (${used.tokens} used)`;
  if (limit.usd !== undefined && used.usd >= limit.usd)
    return `BUDGET_EXCEEDED: ${whose} budget of $${limit.usd} is spent ($${used.usd} used)`;
  return undefined;
}
