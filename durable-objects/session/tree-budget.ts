import { type BudgetLedger, type BudgetState, budgetSpent } from "../../src/agent/budget";
import { compact } from "../../src/core/compact";
import { addSpend, type Spend } from "../../src/core/usage";
import type { SessionHeader } from "../../src/contract/session";
import type { Remote, SessionRpc } from "../../src/contract/session-api";
import type { SessionStores } from "../store/session-stores";

/** What a tree's budget reads and whom it asks: the session's header, its stores, other sessions. */
export interface TreeBudgetPorts {
  header(): SessionHeader | undefined;
  readonly stores: Pick<SessionStores, "usage" | "budgetDraws" | "transact">;
  session(id: string): Remote<SessionRpc>;
}

/**
 * A tree's shared budget (README "Prices and budgets"). The session created with a budget owns
 * it: it keeps what every session of its tree last reported spending (store/budget-draws.ts).
 * Every session below it carries the same limits and the owner's id; before each of its model
 * calls it reports its own spending to the owner and learns the tree's total, and after each it
 * reports again. So parallel children draw from one remainder: once the tree's total reaches the
 * limit, each running session makes at most the one model call it had begun or had been cleared
 * for with the figure it last learnt, and no more. A session that cannot reach the owner keeps
 * the last figure it learnt plus what it spent since (never less than its own).
 */
export class TreeBudget implements BudgetLedger {
  readonly #ctx: TreeBudgetPorts;
  /** Below the owner: the tree's total it last learnt, and its own spending when it learnt it. */
  #learnt: { tree: Spend; own: Spend } | undefined;

  constructor(ctx: TreeBudgetPorts) {
    this.#ctx = ctx;
  }

  state(): BudgetState | undefined {
    const budget = this.#ctx.header()?.options.budget;
    if (!budget) return undefined;
    const limit = compact({ tokens: budget.tokens, usd: budget.usd });
    const own = this.#ctx.stores.usage.spend();
    if (budget.owner === undefined)
      return { limit, used: addSpend(own, this.#ctx.stores.budgetDraws.total()), shared: false };
    const learnt = this.#learnt;
    const used = learnt
      ? addSpend(learnt.tree, { tokens: own.tokens - learnt.own.tokens, usd: own.usd - learnt.own.usd })
      : own;
    return { limit, used, shared: true };
  }

  /** Why this session may start no child on its budget (it is spent), or undefined. */
  spent(): string | undefined {
    return budgetSpent(this.state());
  }

  async sync(): Promise<void> {
    const header = this.#ctx.header();
    const owner = header?.options.budget?.owner;
    if (!header || owner === undefined) return;
    const own = this.#ctx.stores.usage.spend();
    try {
      const tree = await this.#ctx.session(owner).drawBudget(header.id, own);
      if (tree) this.#learnt = { tree, own };
    } catch {
      // the owner is out of reach: the last figure stands, and the next model call asks again
    }
  }

  /**
   * At the owner: `memberId` has spent `spend` so far (a figure that only grows; a lower one
   * changes nothing). Answers the tree's total, or undefined where this session owns no budget.
   */
  draw(memberId: string, spend: Spend): Spend | undefined {
    const budget = this.#ctx.header()?.options.budget;
    if (!budget || budget.owner !== undefined) return undefined;
    const { stores } = this.#ctx;
    stores.transact(() => stores.budgetDraws.record(memberId, spend));
    return this.state()?.used;
  }
}
