import { priced, type Prices } from "../core/prices";
import { roundUsd, type Spend } from "../core/usage";

/**
 * A session's budget (README "Prices and budgets"): tokens (input plus output) and/or US dollars.
 * A tree shares one: the session created with it owns it, and every session below draws from
 * the same remainder (durable-objects/session/tree-budget.ts keeps the figures).
 *
 * A budget is a cap: before each model call (a step's, a compaction's) a session reserves the
 * call's worst case from the budget (`reserve`): the request's estimated input plus its output
 * limit. The reservation counts against the budget until the call's real usage is recorded and
 * the reservation settled (`settle`), so calls running side by side in many sessions of a tree
 * never promise more than the budget holds. A call whose reservation does not fit is not made.
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

/** What a session's budget counts, for the turn driver (around each model call). */
export interface BudgetLedger {
  /** The budget and what counts against it now; undefined when the session has none. */
  state(): BudgetState | undefined;
  /**
   * Reserves `worst` for the model call `key` names (`<turn>.<step>`, or with `/compaction` for a
   * step's summarizing call): resolves undefined once it is held (or when the session has no
   * budget), else why it does not fit (`BUDGET_EXCEEDED: …`). The same key again while it is held
   * is the same reservation (a step re-run after a crash reuses it). A session holds one
   * reservation at a time: a new key settles the one before. Rejects when the budget's owner
   * cannot be reached (the caller retries as after a crash). `holdMs`: how long the call may
   * take at most; a reservation never settled is released after that.
   */
  reserve(key: string, worst: Spend, holdMs: number): Promise<string | undefined>;
  /**
   * Whether a reservation is held for a call that is over (`current`: the key of the step about
   * to run, or undefined while no turn is open): it is settled before anything else runs.
   */
  owesSettle(current: string | undefined): boolean;
  /** Reports the session's spending and releases its reservation; rejects when the owner cannot be reached. */
  settle(): Promise<void>;
}

/** A model call refused because its reservation does not fit in the budget (the turn's `BUDGET_EXCEEDED`). */
export class BudgetRefusal extends Error {}

/**
 * The output a call may write, for its reservation, when the session sets no `maxOutputTokens`
 * (README "Prices and budgets"). A session that sets one reserves that instead.
 */
export const DEFAULT_OUTPUT_RESERVE = 1024;

/** The key of a model step's reservation, and of its compaction's. */
export function stepBudgetKey(turn: number, step: number): string {
  return `${turn}.${step}`;
}

/** The worst case of one model call: `inputTokens` in, `outputTokens` out, priced at `route`. */
export function worstCase(
  inputTokens: number,
  outputTokens: number | undefined,
  route: string,
  prices: Prices,
): Spend {
  const usage = { inputTokens, outputTokens: outputTokens ?? DEFAULT_OUTPUT_RESERVE };
  return { tokens: usage.inputTokens + usage.outputTokens, usd: priced(usage, route, prices)?.costUsd ?? 0 };
}

/**
 * How long a model call may hold its reservation: every attempt of the step and of its
 * compaction timing out after its longest backoff. Past that, a reservation nobody settled (its
 * session was deleted or never came back) stops counting.
 */
export function reservationHoldMs(policy: {
  attemptsPerStep: number;
  timeoutMs: number;
  maxDelayMs: number;
}): number {
  const timeout = Number.isFinite(policy.timeoutMs) ? policy.timeoutMs : 3_600_000;
  return 2 * policy.attemptsPerStep * (timeout + policy.maxDelayMs);
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

/**
 * Why a call (or a start) whose worst case is `worst` does not fit (`BUDGET_EXCEEDED: …`), with
 * `held` reserved by other calls under way; undefined when it fits. The message names the
 * reservation and the remainder, so a caller can lower `maxOutputTokens` or raise the budget.
 */
export function reservationRefusal(
  state: BudgetState | undefined,
  held: Spend,
  worst: Spend,
  what = "this model call",
): string | undefined {
  const spent = budgetSpent(state);
  if (spent || !state) return spent;
  const whose = state.shared ? "its tree's" : "the session's";
  const { limit, used } = state;
  if (limit.tokens !== undefined) {
    const left = limit.tokens - used.tokens - held.tokens;
    if (worst.tokens > left)
      return (
        `BUDGET_EXCEEDED: ${whose} token budget of ${limit.tokens} cannot cover ${what}: it reserves ` +
        `${worst.tokens} tokens (its input estimate plus its output limit) and ${Math.max(0, left)} are left ` +
        `(${used.tokens} used, ${held.tokens} reserved by calls under way); lower maxOutputTokens or raise the budget`
      );
  }
  if (limit.usd !== undefined) {
    const left = roundUsd(limit.usd - used.usd - held.usd);
    if (worst.usd > left)
      return (
        `BUDGET_EXCEEDED: ${whose} budget of $${limit.usd} cannot cover ${what}: it reserves ` +
        `$${worst.usd} (its input estimate plus its output limit) and $${Math.max(0, left)} is left ` +
        `($${used.usd} used, $${held.usd} reserved by calls under way); lower maxOutputTokens or raise the budget`
      );
  }
  return undefined;
}
