import type { BudgetAnswer, BudgetDraw } from "../../src/contract/session-api";
import { peerMethod } from "../kernel/methods";
import type { Parts } from "../session/session-parts";

/** The budget of a tree, at the session that owns it (tree-budget.ts). */
export const budgetMethods = {
  /** A session of the tree whose budget this one owns reports its spending. */
  drawBudget: peerMethod({
    absent: (): BudgetAnswer | undefined => undefined,
    run: (parts: Parts, memberId: string, draw: BudgetDraw) => parts.ctx.budget.draw(memberId, draw),
  }),
};
